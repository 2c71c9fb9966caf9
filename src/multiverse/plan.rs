//! The plan's invariants as data, and the walks the rest of Multiverse needs over it.
//!
//! `Plan::check` finds every way a plan can be broken (a WBS node that is no task, a task
//! placed nowhere or twice, an unknown parent, a node its own ancestor, a dependency on
//! nothing, a dependency cycle, a design whose id is not its key) and returns them as typed
//! findings, each a stable key and the ids involved. Every stage is linear in the size of
//! the plan and iterative, so a 10,000-deep chain neither slows it down nor overflows the
//! stack. The original checked none of this (digest §10.2; AR-M13, AR-M14).

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use super::model::{Plan, TaskId};

/// At most this many dependency cycles are reported for one plan: a few name the problem,
/// and a pathological plan (every task of a long chain pointing back at its start) could
/// otherwise make the report quadratic in the plan's size.
pub const MAX_CYCLES_REPORTED: usize = 8;

/// One broken invariant of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "key", rename_all = "kebab-case")]
pub enum PlanFinding {
    /// A task's design carries an id other than the key it is stored under.
    IdMismatch { stored_as: TaskId, id: TaskId },
    /// The WBS places an id that is no task.
    WbsNodeNotATask { id: TaskId },
    /// A task the WBS does not place.
    TaskNotInWbs { id: TaskId },
    /// A task the WBS places more than once.
    TaskPlacedTwice { id: TaskId },
    /// The WBS gives children to an id that is no task.
    WbsUnknownParent { parent: TaskId },
    /// A children list that is empty: a task without children has no entry, so equal
    /// plans serialise equally.
    WbsEmptyChildren { parent: TaskId },
    /// These nodes are each other's ancestors, in order: each is the parent of the next,
    /// the last the parent of the first.
    WbsCycle { ids: Vec<TaskId> },
    /// A task depends on an id that is no task.
    UnknownDependency { task: TaskId, dependency: TaskId },
    /// A task lists the same dependency twice.
    DuplicateDependency { task: TaskId, dependency: TaskId },
    /// These tasks depend on each other in a cycle, in order: each depends on the next,
    /// the last on the first (a task depending on itself is a cycle of one).
    DependencyCycle { ids: Vec<TaskId> },
}

impl PlanFinding {
    /// The stable key: what tests, the API and the chat's reply match on.
    pub fn key(&self) -> &'static str {
        match self {
            PlanFinding::IdMismatch { .. } => "id-mismatch",
            PlanFinding::WbsNodeNotATask { .. } => "wbs-node-not-a-task",
            PlanFinding::TaskNotInWbs { .. } => "task-not-in-wbs",
            PlanFinding::TaskPlacedTwice { .. } => "task-placed-twice",
            PlanFinding::WbsUnknownParent { .. } => "wbs-unknown-parent",
            PlanFinding::WbsEmptyChildren { .. } => "wbs-empty-children",
            PlanFinding::WbsCycle { .. } => "wbs-cycle",
            PlanFinding::UnknownDependency { .. } => "unknown-dependency",
            PlanFinding::DuplicateDependency { .. } => "duplicate-dependency",
            PlanFinding::DependencyCycle { .. } => "dependency-cycle",
        }
    }

    /// The ids the finding is about, the most relevant first.
    pub fn ids(&self) -> Vec<&TaskId> {
        match self {
            PlanFinding::IdMismatch { stored_as, id } => vec![stored_as, id],
            PlanFinding::WbsNodeNotATask { id }
            | PlanFinding::TaskNotInWbs { id }
            | PlanFinding::TaskPlacedTwice { id } => vec![id],
            PlanFinding::WbsUnknownParent { parent } | PlanFinding::WbsEmptyChildren { parent } => {
                vec![parent]
            }
            PlanFinding::WbsCycle { ids } | PlanFinding::DependencyCycle { ids } => {
                ids.iter().collect()
            }
            PlanFinding::UnknownDependency { task, dependency }
            | PlanFinding::DuplicateDependency { task, dependency } => vec![task, dependency],
        }
    }
}

impl std::fmt::Display for PlanFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanFinding::IdMismatch { stored_as, id } => {
                write!(f, "task {stored_as} carries the id {id} in its design")
            }
            PlanFinding::WbsNodeNotATask { id } => {
                write!(f, "the WBS places {id}, which is no task")
            }
            PlanFinding::TaskNotInWbs { id } => write!(f, "task {id} is not in the WBS"),
            PlanFinding::TaskPlacedTwice { id } => {
                write!(f, "task {id} is placed more than once in the WBS")
            }
            PlanFinding::WbsUnknownParent { parent } => {
                write!(f, "the WBS gives children to {parent}, which is no task")
            }
            PlanFinding::WbsEmptyChildren { parent } => {
                write!(f, "the WBS holds an empty children list for {parent}")
            }
            PlanFinding::WbsCycle { ids } => {
                write!(f, "WBS nodes are their own ancestors: {}", chain(ids))
            }
            PlanFinding::UnknownDependency { task, dependency } => {
                write!(f, "task {task} depends on {dependency}, which is no task")
            }
            PlanFinding::DuplicateDependency { task, dependency } => {
                write!(f, "task {task} lists the dependency {dependency} twice")
            }
            PlanFinding::DependencyCycle { ids } => {
                write!(f, "dependency cycle: {}", chain(ids))
            }
        }
    }
}

/// `a → b → c → a`.
pub(crate) fn chain(ids: &[TaskId]) -> String {
    let mut parts: Vec<&str> = ids.iter().map(TaskId::as_str).collect();
    if let Some(first) = ids.first() {
        parts.push(first.as_str());
    }
    parts.join(" → ")
}

/// The plan's tasks numbered in id order, so the checks and walks run over integers and
/// vectors: one hash per id instead of a string-comparing tree search per step, which is
/// what keeps a 10,000-task plan as cheap per task as a 1,000-task one.
struct Index<'a> {
    ids: Vec<&'a TaskId>,
    at: HashMap<&'a TaskId, usize>,
}

/// In `Index` terms: not placed anywhere, and placed under the root (or under an id that
/// is no task, which is reported on its own).
const UNPLACED: usize = usize::MAX;
const TOP: usize = usize::MAX - 1;

impl<'a> Index<'a> {
    fn new(plan: &'a Plan) -> Index<'a> {
        let ids: Vec<&TaskId> = plan.tasks.keys().collect();
        let at = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        Index { ids, at }
    }

    fn of(&self, id: &TaskId) -> Option<usize> {
        self.at.get(id).copied()
    }

    /// Each task's dependencies that are tasks, as numbers, in order.
    fn dependencies(&self, plan: &Plan) -> Vec<Vec<usize>> {
        plan.tasks
            .values()
            .map(|d| d.dependencies.iter().filter_map(|x| self.of(x)).collect())
            .collect()
    }
}

impl Plan {
    /// Every broken invariant, in a stable order (WBS findings, then dependencies, each
    /// in id order); empty for a valid plan.
    pub fn check(&self) -> Vec<PlanFinding> {
        let mut findings = Vec::new();
        for (key, design) in &self.tasks {
            if *key != design.id {
                findings.push(PlanFinding::IdMismatch {
                    stored_as: key.clone(),
                    id: design.id.clone(),
                });
            }
        }
        let index = Index::new(self);
        self.check_wbs(&index, &mut findings);
        self.check_dependencies(&index, &mut findings);
        findings
    }

    fn check_wbs(&self, index: &Index<'_>, findings: &mut Vec<PlanFinding>) {
        let n = index.ids.len();
        // Each task's parent from its first placement (TOP: the root), UNPLACED if none.
        let mut parent = vec![UNPLACED; n];
        let mut twice = vec![false; n];
        let mut not_tasks: BTreeSet<TaskId> = BTreeSet::new();
        let mut place = |id: &'_ TaskId, under: usize| match index.of(id) {
            Some(i) if parent[i] == UNPLACED => parent[i] = under,
            Some(i) => twice[i] = true,
            None => {
                not_tasks.insert(id.clone());
            }
        };
        for id in &self.wbs.roots {
            place(id, TOP);
        }
        for (key, children) in &self.wbs.children {
            let under = match index.of(key) {
                Some(i) => i,
                None => {
                    findings.push(PlanFinding::WbsUnknownParent {
                        parent: key.clone(),
                    });
                    TOP
                }
            };
            if children.is_empty() {
                findings.push(PlanFinding::WbsEmptyChildren {
                    parent: key.clone(),
                });
            }
            for id in children {
                place(id, under);
            }
        }
        for (i, id) in index.ids.iter().enumerate() {
            if twice[i] {
                findings.push(PlanFinding::TaskPlacedTwice { id: (*id).clone() });
            }
        }
        findings.extend(
            not_tasks
                .into_iter()
                .map(|id| PlanFinding::WbsNodeNotATask { id }),
        );
        for (i, id) in index.ids.iter().enumerate() {
            if parent[i] == UNPLACED {
                findings.push(PlanFinding::TaskNotInWbs { id: (*id).clone() });
            }
        }
        // Own ancestors: walk up from every node, each node visited once overall. A walk
        // that meets a node of its own path has found a cycle.
        const NEW: u8 = 0;
        const ON_PATH: u8 = 1;
        const DONE: u8 = 2;
        let mut mark = vec![NEW; n];
        let mut path: Vec<usize> = Vec::new();
        for start in 0..n {
            path.clear();
            let mut at = start;
            while at < n {
                match mark[at] {
                    DONE => break,
                    ON_PATH => {
                        // `path` runs child → parent; the cycle starts where it met itself.
                        let from = path.iter().position(|p| *p == at).unwrap_or(0);
                        let mut ids: Vec<TaskId> = path[from..]
                            .iter()
                            .rev()
                            .map(|i| index.ids[*i].clone())
                            .collect();
                        rotate_to_smallest(&mut ids);
                        findings.push(PlanFinding::WbsCycle { ids });
                        break;
                    }
                    _ => {
                        mark[at] = ON_PATH;
                        path.push(at);
                        at = parent[at];
                    }
                }
            }
            for i in &path {
                mark[*i] = DONE;
            }
        }
    }

    fn check_dependencies(&self, index: &Index<'_>, findings: &mut Vec<PlanFinding>) {
        // `listed_by[j] == i + 1`: task j is already in task i's list (no set per task).
        let mut listed_by = vec![0usize; index.ids.len()];
        for (i, (id, design)) in self.tasks.iter().enumerate() {
            for (k, dependency) in design.dependencies.iter().enumerate() {
                let twice = match index.of(dependency) {
                    Some(j) => std::mem::replace(&mut listed_by[j], i + 1) == i + 1,
                    // Unknown ids are rare: a look back is enough.
                    None => design.dependencies[..k].contains(dependency),
                };
                if twice {
                    findings.push(PlanFinding::DuplicateDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                } else if index.of(dependency).is_none() {
                    findings.push(PlanFinding::UnknownDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                }
            }
        }
        let dependencies = index.dependencies(self);
        findings.extend(
            cycles(index, &dependencies, MAX_CYCLES_REPORTED)
                .into_iter()
                .map(|ids| PlanFinding::DependencyCycle { ids }),
        );
    }

    /// Up to `max` dependency cycles, each in dependency order starting at its smallest
    /// id.
    pub fn dependency_cycles(&self, max: usize) -> Vec<Vec<TaskId>> {
        let index = Index::new(self);
        cycles(&index, &index.dependencies(self), max)
    }

    /// The tasks that depend on `id` directly, in id order.
    pub fn dependents(&self, id: &TaskId) -> Vec<&TaskId> {
        self.tasks
            .iter()
            .filter(|(_, d)| d.dependencies.contains(id))
            .map(|(k, _)| k)
            .collect()
    }

    /// Every task's direct dependents at once (one pass, for a scheduler that needs them
    /// all), each list in id order; tasks nothing depends on have no entry.
    pub fn dependents_index(&self) -> HashMap<&TaskId, Vec<&TaskId>> {
        let mut index: HashMap<&TaskId, Vec<&TaskId>> = HashMap::new();
        for (id, design) in &self.tasks {
            for dependency in &design.dependencies {
                if let Some((dependency, _)) = self.tasks.get_key_value(dependency) {
                    let list = index.entry(dependency).or_default();
                    if list.last() != Some(&id) {
                        list.push(id);
                    }
                }
            }
        }
        index
    }

    /// The tasks with every dependency before its dependents (Kahn's algorithm; among
    /// tasks ready at once, in id order, so the order is deterministic). `None` when the
    /// dependencies have a cycle. Unknown dependencies are ignored (`check` reports them).
    pub fn topological_order(&self) -> Option<Vec<&TaskId>> {
        let index = Index::new(self);
        let dependencies = index.dependencies(self);
        let n = index.ids.len();
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut waiting: Vec<usize> = vec![0; n];
        for (i, list) in dependencies.iter().enumerate() {
            waiting[i] = list.len();
            for j in list {
                dependents[*j].push(i);
            }
        }
        let mut queue: VecDeque<usize> = (0..n).filter(|i| waiting[*i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = queue.pop_front() {
            order.push(index.ids[i]);
            for dependent in &dependents[i] {
                waiting[*dependent] -= 1;
                if waiting[*dependent] == 0 {
                    queue.push_back(*dependent);
                }
            }
        }
        (order.len() == n).then_some(order)
    }

    /// The WBS depth first (each node, then its children in order), which is the order the
    /// IDE lists tasks in. Each node once even in a broken WBS; ids the WBS places that
    /// are no task are left out, and tasks it does not reach follow at the end in id order
    /// (the original's fallback to its task list).
    pub fn wbs_order(&self) -> Vec<&TaskId> {
        let index = Index::new(self);
        let mut seen = vec![false; index.ids.len()];
        let mut order = Vec::with_capacity(index.ids.len());
        self.walk(&index, self.wbs.roots.iter(), &mut seen, &mut order);
        for (i, id) in index.ids.iter().enumerate() {
            if !seen[i] {
                order.push(*id);
            }
        }
        order
    }

    /// `id` and everything under it in the WBS, depth first; empty when `id` is no task.
    pub fn subtree(&self, id: &TaskId) -> Vec<&TaskId> {
        let Some((id, _)) = self.tasks.get_key_value(id) else {
            return Vec::new();
        };
        let index = Index::new(self);
        let mut seen = vec![false; index.ids.len()];
        let mut order = Vec::new();
        self.walk(&index, std::iter::once(id), &mut seen, &mut order);
        order
    }

    /// The parent of `id` in the WBS: `Some(None)` under the root, `None` when it is not
    /// placed.
    pub fn parent_of(&self, id: &TaskId) -> Option<Option<&TaskId>> {
        if self.wbs.roots.contains(id) {
            return Some(None);
        }
        self.wbs
            .children
            .iter()
            .find(|(_, children)| children.contains(id))
            .map(|(parent, _)| Some(parent))
    }

    /// Every placed node's parent at once (`None`: the root), for a listing that shows
    /// each task's parent without a search per task; a node placed twice keeps its first.
    pub fn parents(&self) -> HashMap<&TaskId, Option<&TaskId>> {
        let mut parents = HashMap::with_capacity(self.tasks.len());
        for id in &self.wbs.roots {
            parents.entry(id).or_insert(None);
        }
        for (parent, children) in &self.wbs.children {
            for id in children {
                parents.entry(id).or_insert(Some(parent));
            }
        }
        parents
    }

    /// Pre-order walk from `starts` with an explicit stack (no recursion: a deep WBS
    /// cannot overflow it), skipping what is seen and what is no task.
    fn walk<'a>(
        &'a self,
        index: &Index<'a>,
        starts: impl DoubleEndedIterator<Item = &'a TaskId>,
        seen: &mut [bool],
        order: &mut Vec<&'a TaskId>,
    ) {
        let mut stack: Vec<&TaskId> = starts.rev().collect();
        while let Some(id) = stack.pop() {
            let Some(i) = index.of(id) else {
                continue;
            };
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            order.push(index.ids[i]);
            if let Some(children) = self.wbs.children.get(id) {
                stack.extend(children.iter().rev());
            }
        }
    }
}

/// Up to `max` cycles of `dependencies` (task numbers), by an iterative depth-first
/// search: a dependency on a task still on the stack closes a cycle, read off the stack.
fn cycles(index: &Index<'_>, dependencies: &[Vec<usize>], max: usize) -> Vec<Vec<TaskId>> {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let n = dependencies.len();
    let mut colour = vec![WHITE; n];
    // Where a grey task sits on the stack, so a cycle is a slice of it.
    let mut depth = vec![0usize; n];
    let mut found: Vec<Vec<TaskId>> = Vec::new();
    // (task, index of its next dependency to look at)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if colour[root] != WHITE {
            continue;
        }
        colour[root] = GREY;
        depth[root] = 0;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (task, next) = *top;
            let Some(&dependency) = dependencies[task].get(next) else {
                colour[task] = BLACK;
                stack.pop();
                continue;
            };
            top.1 += 1;
            match colour[dependency] {
                BLACK => {}
                GREY => {
                    if found.len() < max {
                        let mut ids: Vec<TaskId> = stack[depth[dependency]..]
                            .iter()
                            .map(|(t, _)| index.ids[*t].clone())
                            .collect();
                        rotate_to_smallest(&mut ids);
                        if !found.contains(&ids) {
                            found.push(ids);
                        }
                    }
                }
                _ => {
                    colour[dependency] = GREY;
                    depth[dependency] = stack.len();
                    stack.push((dependency, 0));
                }
            }
        }
    }
    found
}

/// A cycle is reported starting at its smallest id, so the same cycle found from another
/// start reads the same.
fn rotate_to_smallest(ids: &mut [TaskId]) {
    if let Some(at) = ids
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.cmp(b.1))
        .map(|(i, _)| i)
    {
        ids.rotate_left(at);
    }
}
