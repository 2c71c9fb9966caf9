//! The typed mutations of a workspace and their fold. A change carries the *resulting
//! value* ("task T's runtime is now R"), never an instruction to compute one, so folding
//! needs no contract, no clock and no decision: the journal replays to exactly the state
//! that was saved.

use serde::{Deserialize, Serialize};

use crate::multiverse::model::{
    BacklogItem, ExecutionState, TaskDesign, TaskId, TaskRuntime, Wbs, WorkspaceState,
};

/// One mutation of one area of the state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Change {
    /// The task's design is now this one (added or replaced).
    TaskDesigned {
        design: TaskDesign,
    },
    /// The task's design is gone (its runtime is a [`Change::RuntimeRemoved`] of its own).
    TaskRemoved {
        task: TaskId,
    },
    /// The WBS is now this one.
    WbsSet {
        wbs: Wbs,
    },
    /// What the orchestrator knows of the task at run time is now this.
    RuntimeSet {
        task: TaskId,
        runtime: TaskRuntime,
    },
    RuntimeRemoved {
        task: TaskId,
    },
    /// The backlog item is now this one (opened or updated, e.g. resolved).
    BacklogSet {
        item: BacklogItem,
    },
    BacklogRemoved {
        id: String,
    },
    /// The scheduler is now in this execution state.
    ExecutionSet {
        execution: ExecutionState,
    },
}

/// The parts of the state, each saved in a file of its own so a change to one (the
/// runtime, which changes most) does not rewrite the others (the plan, which is largest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Area {
    Plan,
    Runtime,
    Backlog,
    Execution,
}

impl Area {
    pub const ALL: [Area; 4] = [Area::Plan, Area::Runtime, Area::Backlog, Area::Execution];

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl Change {
    /// The one area this change touches.
    pub fn area(&self) -> Area {
        match self {
            Change::TaskDesigned { .. } | Change::TaskRemoved { .. } | Change::WbsSet { .. } => {
                Area::Plan
            }
            Change::RuntimeSet { .. } | Change::RuntimeRemoved { .. } => Area::Runtime,
            Change::BacklogSet { .. } | Change::BacklogRemoved { .. } => Area::Backlog,
            Change::ExecutionSet { .. } => Area::Execution,
        }
    }

    /// Folds the change into `state`. Total: removing what is absent is a no-op, so a
    /// fold never fails and never depends on anything but the state and the change.
    pub fn apply(self, state: &mut WorkspaceState) {
        match self {
            Change::TaskDesigned { design } => {
                state.plan.tasks.insert(design.id.clone(), design);
            }
            Change::TaskRemoved { task } => {
                state.plan.tasks.remove(&task);
            }
            Change::WbsSet { wbs } => state.plan.wbs = wbs,
            Change::RuntimeSet { task, runtime } => {
                state.runtime.insert(task, runtime);
            }
            Change::RuntimeRemoved { task } => {
                state.runtime.remove(&task);
            }
            Change::BacklogSet { item } => {
                state.backlog.insert(item.id.clone(), item);
            }
            Change::BacklogRemoved { id } => {
                state.backlog.remove(&id);
            }
            Change::ExecutionSet { execution } => state.execution = execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_touches_only_its_area() {
        let id = TaskId::parse("t1").unwrap();
        let mut state = WorkspaceState::default();
        Change::ExecutionSet {
            execution: ExecutionState::Paused,
        }
        .apply(&mut state);
        assert_eq!(state.execution, ExecutionState::Paused);
        assert!(state.plan.tasks.is_empty() && state.runtime.is_empty());
        // Removing what is not there is a no-op, not an error.
        let before = state.clone();
        Change::TaskRemoved { task: id.clone() }.apply(&mut state);
        Change::RuntimeRemoved { task: id }.apply(&mut state);
        Change::BacklogRemoved { id: "b1".into() }.apply(&mut state);
        assert_eq!(state, before);
    }

    #[test]
    fn changes_are_tagged_by_kind_and_refuse_unknown_fields() {
        let change = Change::ExecutionSet {
            execution: ExecutionState::Running,
        };
        let text = serde_json::to_string(&change).unwrap();
        assert_eq!(text, r#"{"kind":"execution_set","execution":"RUNNING"}"#);
        assert_eq!(serde_json::from_str::<Change>(&text).unwrap(), change);
        assert!(
            serde_json::from_str::<Change>(
                r#"{"kind":"execution_set","execution":"RUNNING","x":1}"#
            )
            .is_err()
        );
        assert!(serde_json::from_str::<Change>(r#"{"kind":"nope"}"#).is_err());
    }
}
