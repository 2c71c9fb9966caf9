//! Pools and the order in which ready tasks start: each pool has its own concurrency
//! limit (the original had `default`, `codegen` and `test` but ran one task at a time, all
//! in `default`); within the plan, higher priority first, then FIFO by the time a task
//! became ready, then by id so the order is total. Pure: the scheduler asks which ready
//! tasks to start now given what runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::lifecycle::Lifecycle;
use super::model::{DEFAULT_POOL, TaskId, WorkspaceState};
use crate::contract::model::Outcome;

/// The pools of a workspace and how many tasks each runs at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pools {
    /// Pool name → tasks at once (at least 1).
    pub limits: BTreeMap<String, usize>,
}

impl Default for Pools {
    /// The original's three pools, two tasks at a time in `default`, one in the others.
    fn default() -> Pools {
        Pools {
            limits: [(DEFAULT_POOL, 2), ("codegen", 1), ("test", 1)]
                .into_iter()
                .map(|(name, limit)| (name.to_string(), limit))
                .collect(),
        }
    }
}

/// A pool a task names that the workspace does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPool {
    pub pool: String,
    pub known: Vec<String>,
}

impl std::fmt::Display for UnknownPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown pool {:?}; this workspace has {}",
            self.pool,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownPool {}

impl Pools {
    /// Whether `pool` exists, for checking a task before it is added.
    pub fn check(&self, pool: &str) -> Result<(), UnknownPool> {
        if self.limits.contains_key(pool) {
            Ok(())
        } else {
            Err(UnknownPool {
                pool: pool.to_string(),
                known: self.limits.keys().cloned().collect(),
            })
        }
    }

    /// The limit of `pool` (a pool no longer configured runs one at a time rather than
    /// never, so no task is stranded by an edited configuration).
    pub fn limit(&self, pool: &str) -> usize {
        self.limits.get(pool).copied().unwrap_or(1).max(1)
    }
}

/// A task that could start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyTask {
    pub id: TaskId,
    pub pool: String,
    pub priority: i32,
    /// When it became ready (the journal's sequence number).
    pub enqueued_seq: u64,
}

/// The tasks to start now, in order: the best ready tasks of each pool up to its free
/// slots. `running` counts what runs per pool.
pub fn pick(pools: &Pools, ready: &[ReadyTask], running: &BTreeMap<String, usize>) -> Vec<TaskId> {
    let mut order: Vec<&ReadyTask> = ready.iter().collect();
    order.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.enqueued_seq.cmp(&b.enqueued_seq))
            .then(a.id.cmp(&b.id))
    });
    let mut taken: BTreeMap<&str, usize> = BTreeMap::new();
    let mut start = Vec::new();
    for task in order {
        let used = taken
            .entry(task.pool.as_str())
            .or_insert_with(|| running.get(&task.pool).copied().unwrap_or(0));
        if *used < pools.limit(&task.pool) {
            *used += 1;
            start.push(task.id.clone());
        }
    }
    start
}

/// One pool as a dashboard shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolSummary {
    pub pool: String,
    /// Tasks at once.
    pub limit: usize,
    /// Tasks with an attempt in flight.
    pub running: usize,
    /// Tasks that could start now and wait for a slot (or for execution).
    pub waiting: usize,
    pub succeeded: usize,
    /// Tasks that failed for good.
    pub failed: usize,
    pub total: usize,
}

/// Every configured pool, and any pool a task names that is not configured (any more),
/// with its counts. Which task counts as waiting, done or failed is read from its
/// lifecycle session (the state's events and outcome), not from state names.
pub fn summaries(pools: &Pools, state: &WorkspaceState, lifecycle: &Lifecycle) -> Vec<PoolSummary> {
    let mut out: BTreeMap<String, PoolSummary> = pools
        .limits
        .keys()
        .map(|pool| (pool.clone(), empty_summary(pools, pool)))
        .collect();
    for (id, design) in &state.plan.tasks {
        let summary = out
            .entry(design.pool.clone())
            .or_insert_with(|| empty_summary(pools, &design.pool));
        summary.total += 1;
        let Some(rt) = state.runtime.get(id) else {
            continue;
        };
        if rt.attempts.last().is_some_and(|a| a.finished_at.is_none()) {
            summary.running += 1;
            continue;
        }
        match lifecycle.finished(&rt.lifecycle) {
            Some(Outcome::Success) => summary.succeeded += 1,
            Some(Outcome::Failure) => summary.failed += 1,
            Some(_) => {}
            None if lifecycle.takes(&rt.lifecycle, "start") => summary.waiting += 1,
            None => {}
        }
    }
    out.into_values().collect()
}

fn empty_summary(pools: &Pools, pool: &str) -> PoolSummary {
    PoolSummary {
        pool: pool.to_string(),
        limit: pools.limit(pool),
        running: 0,
        waiting: 0,
        succeeded: 0,
        failed: 0,
        total: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(id: &str, pool: &str, priority: i32, seq: u64) -> ReadyTask {
        ReadyTask {
            id: TaskId::parse(id).unwrap(),
            pool: pool.into(),
            priority,
            enqueued_seq: seq,
        }
    }

    fn ids(tasks: Vec<TaskId>) -> Vec<String> {
        tasks.into_iter().map(String::from).collect()
    }

    #[test]
    fn each_pool_fills_its_own_slots_fifo_within_a_priority() {
        let pools = Pools::default();
        let tasks = [
            ready("c", "default", 0, 3),
            ready("a", "default", 0, 1),
            ready("b", "default", 0, 2),
            ready("t1", "test", 0, 1),
            ready("t2", "test", 0, 2),
        ];
        assert_eq!(
            ids(pick(&pools, &tasks, &BTreeMap::new())),
            ["a", "t1", "b"]
        );
        // One default slot taken already: only the oldest ready one starts.
        let running = BTreeMap::from([("default".to_string(), 1)]);
        assert_eq!(ids(pick(&pools, &tasks, &running)), ["a", "t1"]);
    }

    #[test]
    fn priority_beats_age_and_the_id_breaks_ties() {
        let pools = Pools {
            limits: BTreeMap::from([("default".to_string(), 1)]),
        };
        let tasks = [
            ready("old", "default", 0, 1),
            ready("urgent", "default", 5, 9),
        ];
        assert_eq!(ids(pick(&pools, &tasks, &BTreeMap::new())), ["urgent"]);
        let tasks = [ready("b", "default", 0, 1), ready("a", "default", 0, 1)];
        assert_eq!(ids(pick(&pools, &tasks, &BTreeMap::new())), ["a"]);
    }

    #[test]
    fn a_pool_no_longer_configured_runs_one_at_a_time() {
        let pools = Pools::default();
        assert!(
            pools
                .check("gpu")
                .unwrap_err()
                .to_string()
                .contains("codegen")
        );
        let tasks = [ready("x", "gpu", 0, 1), ready("y", "gpu", 0, 2)];
        assert_eq!(ids(pick(&pools, &tasks, &BTreeMap::new())), ["x"]);
    }
}
