//! The WBS as a patch edits it: each node's parent and each parent's children, so a move
//! is a couple of list edits instead of a search through the plan.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::multiverse::model::{Plan, TaskDesign, TaskId, Wbs};

/// The plan being patched; `children[None]` is the root's.
pub(super) struct Work {
    pub(super) tasks: BTreeMap<TaskId, TaskDesign>,
    pub(super) children: HashMap<Option<TaskId>, Vec<TaskId>>,
    pub(super) parent: HashMap<TaskId, Option<TaskId>>,
}

impl Work {
    pub(super) fn from_plan(plan: &Plan) -> Work {
        let mut children: HashMap<Option<TaskId>, Vec<TaskId>> = HashMap::new();
        let mut parent = HashMap::with_capacity(plan.tasks.len());
        for id in &plan.wbs.roots {
            parent.insert(id.clone(), None);
        }
        children.insert(None, plan.wbs.roots.clone());
        for (p, list) in &plan.wbs.children {
            for id in list {
                parent.insert(id.clone(), Some(p.clone()));
            }
            children.insert(Some(p.clone()), list.clone());
        }
        Work {
            tasks: plan.tasks.clone(),
            children,
            parent,
        }
    }

    pub(super) fn into_plan(mut self) -> Plan {
        let roots = self.children.remove(&None).unwrap_or_default();
        let children = self
            .children
            .into_iter()
            .filter_map(|(p, list)| Some((p?, list)))
            .filter(|(_, list)| !list.is_empty())
            .collect();
        Plan {
            tasks: self.tasks,
            wbs: Wbs { roots, children },
        }
    }

    /// Take `id` out of its parent's children, returning where it was.
    pub(super) fn detach(&mut self, id: &TaskId) -> Option<(Option<TaskId>, usize)> {
        let parent = self.parent.remove(id)?;
        let siblings = self.children.get_mut(&parent)?;
        let at = siblings.iter().position(|s| s == id)?;
        siblings.remove(at);
        Some((parent, at))
    }

    pub(super) fn attach(&mut self, id: &TaskId, parent: Option<TaskId>, at: usize) {
        let siblings = self.children.entry(parent.clone()).or_default();
        let at = at.min(siblings.len());
        siblings.insert(at, id.clone());
        self.parent.insert(id.clone(), parent);
    }

    /// Whether `ancestor` is `id` or above it. Bounded by the node count, so even a
    /// broken WBS cannot loop.
    pub(super) fn is_ancestor_or_self(&self, ancestor: &TaskId, id: &TaskId) -> bool {
        let mut at = Some(id);
        for _ in 0..=self.parent.len() {
            match at {
                Some(node) if node == ancestor => return true,
                Some(node) => at = self.parent.get(node).and_then(Option::as_ref),
                None => return false,
            }
        }
        false
    }

    /// `id` and everything under it, depth first.
    pub(super) fn subtree(&self, id: &TaskId) -> Vec<TaskId> {
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![id.clone()];
        while let Some(node) = stack.pop() {
            if !seen.insert(node.clone()) {
                continue;
            }
            if let Some(children) = self.children.get(&Some(node.clone())) {
                stack.extend(children.iter().rev().cloned());
            }
            order.push(node);
        }
        order
    }
}
