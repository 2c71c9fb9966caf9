//! The plan's invariants as data, and the walks the rest of Multiverse needs over it.
//!
//! `Plan::check` finds every way a plan can be broken (a WBS node that is no task, a task
//! placed nowhere or twice, an unknown parent, a node its own ancestor, a dependency on
//! nothing, a dependency cycle, a design whose id is not its key) and returns them as typed
//! findings, each a stable key and the ids involved. Every stage is linear in the size of
//! the plan and iterative, so a 10,000-deep chain neither slows it down nor overflows the
//! stack. The original checked none of this (digest §10.2; AR-M13, AR-M14).

use std::collections::{HashMap, HashSet};

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
        self.check_wbs(&mut findings);
        self.check_dependencies(&mut findings);
        findings
    }

    fn check_wbs(&self, findings: &mut Vec<PlanFinding>) {
        // Each placed id → its parent (None: the root), from its first placement.
        let mut parent_of: HashMap<&TaskId, Option<&TaskId>> =
            HashMap::with_capacity(self.tasks.len());
        let mut twice: Vec<&TaskId> = Vec::new();
        for id in &self.wbs.roots {
            if parent_of.insert(id, None).is_some() {
                twice.push(id);
            }
        }
        for (parent, children) in &self.wbs.children {
            if !self.tasks.contains_key(parent) {
                findings.push(PlanFinding::WbsUnknownParent {
                    parent: parent.clone(),
                });
            }
            if children.is_empty() {
                findings.push(PlanFinding::WbsEmptyChildren {
                    parent: parent.clone(),
                });
            }
            for id in children {
                if parent_of.contains_key(id) {
                    twice.push(id);
                } else {
                    parent_of.insert(id, Some(parent));
                }
            }
        }
        let mut reported: HashSet<&TaskId> = HashSet::new();
        twice.sort();
        for id in twice {
            if reported.insert(id) {
                findings.push(PlanFinding::TaskPlacedTwice { id: id.clone() });
            }
        }
        let mut not_tasks: Vec<&TaskId> = parent_of
            .keys()
            .copied()
            .filter(|id| !self.tasks.contains_key(*id))
            .collect();
        not_tasks.sort();
        findings.extend(
            not_tasks
                .into_iter()
                .map(|id| PlanFinding::WbsNodeNotATask { id: id.clone() }),
        );
        for id in self.tasks.keys() {
            if !parent_of.contains_key(id) {
                findings.push(PlanFinding::TaskNotInWbs { id: id.clone() });
            }
        }
        // Own ancestors: walk up from every node, each node visited once overall. A walk
        // that meets a node of its own path has found a cycle.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            OnPath,
            Done,
        }
        let mut marks: HashMap<&TaskId, Mark> = HashMap::with_capacity(parent_of.len());
        let mut starts: Vec<&TaskId> = parent_of.keys().copied().collect();
        starts.sort();
        let mut path: Vec<&TaskId> = Vec::new();
        for start in starts {
            path.clear();
            let mut at = Some(start);
            while let Some(id) = at {
                match marks.get(id) {
                    Some(Mark::Done) => break,
                    Some(Mark::OnPath) => {
                        // `path` runs child → parent; the cycle starts where it met itself.
                        let from = path.iter().position(|p| *p == id).unwrap_or(0);
                        let mut ids: Vec<TaskId> =
                            path[from..].iter().rev().map(|i| (*i).clone()).collect();
                        rotate_to_smallest(&mut ids);
                        findings.push(PlanFinding::WbsCycle { ids });
                        break;
                    }
                    None => {
                        marks.insert(id, Mark::OnPath);
                        path.push(id);
                        at = parent_of.get(id).copied().flatten();
                    }
                }
            }
            for id in &path {
                marks.insert(id, Mark::Done);
            }
        }
    }

    fn check_dependencies(&self, findings: &mut Vec<PlanFinding>) {
        for (id, design) in &self.tasks {
            let mut seen: HashSet<&TaskId> = HashSet::with_capacity(design.dependencies.len());
            for dependency in &design.dependencies {
                if !seen.insert(dependency) {
                    findings.push(PlanFinding::DuplicateDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                } else if !self.tasks.contains_key(dependency) {
                    findings.push(PlanFinding::UnknownDependency {
                        task: id.clone(),
                        dependency: dependency.clone(),
                    });
                }
            }
        }
        findings.extend(
            self.dependency_cycles(MAX_CYCLES_REPORTED)
                .into_iter()
                .map(|ids| PlanFinding::DependencyCycle { ids }),
        );
    }

    /// Up to `max` dependency cycles, each in dependency order starting at its smallest
    /// id. An iterative depth-first search: a back edge closes a cycle, read off the stack.
    pub fn dependency_cycles(&self, max: usize) -> Vec<Vec<TaskId>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Colour {
            Grey,
            Black,
        }
        let mut colour: HashMap<&TaskId, Colour> = HashMap::with_capacity(self.tasks.len());
        let mut cycles = Vec::new();
        // (task, index of its next dependency to look at)
        let mut stack: Vec<(&TaskId, usize)> = Vec::new();
        for root in self.tasks.keys() {
            if colour.contains_key(root) {
                continue;
            }
            colour.insert(root, Colour::Grey);
            stack.push((root, 0));
            while let Some(top) = stack.last_mut() {
                let (id, next) = *top;
                let dependencies = self
                    .tasks
                    .get(id)
                    .map(|d| d.dependencies.as_slice())
                    .unwrap_or_default();
                let Some(dependency) = dependencies.get(next) else {
                    colour.insert(id, Colour::Black);
                    stack.pop();
                    continue;
                };
                top.1 += 1;
                let Some((dependency, _)) = self.tasks.get_key_value(dependency) else {
                    continue; // an unknown dependency, reported on its own
                };
                match colour.get(dependency) {
                    Some(Colour::Black) => {}
                    Some(Colour::Grey) => {
                        if cycles.len() < max {
                            let from = stack
                                .iter()
                                .position(|(s, _)| *s == dependency)
                                .unwrap_or(0);
                            let mut ids: Vec<TaskId> =
                                stack[from..].iter().map(|(s, _)| (*s).clone()).collect();
                            rotate_to_smallest(&mut ids);
                            if !cycles.contains(&ids) {
                                cycles.push(ids);
                            }
                        }
                    }
                    None => {
                        colour.insert(dependency, Colour::Grey);
                        stack.push((dependency, 0));
                    }
                }
            }
        }
        cycles
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
        let dependents = self.dependents_index();
        let mut waiting: HashMap<&TaskId, usize> = HashMap::with_capacity(self.tasks.len());
        let mut queue: std::collections::VecDeque<&TaskId> = std::collections::VecDeque::new();
        for (id, design) in &self.tasks {
            let known: HashSet<&TaskId> = design
                .dependencies
                .iter()
                .filter(|d| self.tasks.contains_key(*d))
                .collect();
            if known.is_empty() {
                queue.push_back(id);
            } else {
                waiting.insert(id, known.len());
            }
        }
        let mut order = Vec::with_capacity(self.tasks.len());
        while let Some(id) = queue.pop_front() {
            order.push(id);
            for dependent in dependents.get(id).into_iter().flatten() {
                if let Some(n) = waiting.get_mut(dependent) {
                    *n -= 1;
                    if *n == 0 {
                        waiting.remove(dependent);
                        queue.push_back(dependent);
                    }
                }
            }
        }
        (order.len() == self.tasks.len()).then_some(order)
    }

    /// The WBS depth first (each node, then its children in order), which is the order the
    /// IDE lists tasks in. Each node once even in a broken WBS; ids the WBS places that
    /// are no task are left out, and tasks it does not reach follow at the end in id order
    /// (the original's fallback to its task list).
    pub fn wbs_order(&self) -> Vec<&TaskId> {
        let mut order = Vec::with_capacity(self.tasks.len());
        let mut seen: HashSet<&TaskId> = HashSet::with_capacity(self.tasks.len());
        self.walk(self.wbs.roots.iter(), &mut seen, &mut order);
        for id in self.tasks.keys() {
            if seen.insert(id) {
                order.push(id);
            }
        }
        order
    }

    /// `id` and everything under it in the WBS, depth first; empty when `id` is no task.
    pub fn subtree(&self, id: &TaskId) -> Vec<&TaskId> {
        let Some((id, _)) = self.tasks.get_key_value(id) else {
            return Vec::new();
        };
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        self.walk(std::iter::once(id), &mut seen, &mut order);
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

    /// Pre-order walk from `starts` with an explicit stack (no recursion: a deep WBS
    /// cannot overflow it), skipping what is seen and what is no task.
    fn walk<'a>(
        &'a self,
        starts: impl DoubleEndedIterator<Item = &'a TaskId>,
        seen: &mut HashSet<&'a TaskId>,
        order: &mut Vec<&'a TaskId>,
    ) {
        let mut stack: Vec<&TaskId> = starts.rev().collect();
        while let Some(id) = stack.pop() {
            let Some((id, _)) = self.tasks.get_key_value(id) else {
                continue;
            };
            if !seen.insert(id) {
                continue;
            }
            order.push(id);
            if let Some(children) = self.wbs.children.get(id) {
                stack.extend(children.iter().rev());
            }
        }
    }
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
