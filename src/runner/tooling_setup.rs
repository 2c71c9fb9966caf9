//! Sets a task up under its `runner.tooling` (see [`super::tooling`]): the worker chosen
//! before the sandbox starts (and the [`WorkerTooling`] that may move later runs to
//! another candidate after a rate limit) and the planner that chooses per call. Apart
//! from `tooling` itself so that the selector does not depend on the planner it serves.

use std::time::Instant;

use super::protocol::planner::Planner;
use super::provider::ProviderError;
use super::task::Task;
use super::tooling::{
    Category, Selector, SplitMix64, WorkerTooling, apply_worker, host_availability,
};

/// What `runner.tooling` (or its absence) set up for a task.
pub(crate) struct TaskTooling {
    /// The planner, or why it could not be built (preflight reports it).
    pub planner: Result<Planner, ProviderError>,
    /// For the timeline: the worker's choice.
    pub line: Option<String>,
    /// The worker's candidates after the first, for the host's fallback after a
    /// rate-limited run; `None` when the profile has no `worker` block.
    pub worker: Option<WorkerTooling>,
}

/// Sets a task up under its `runner.tooling`: the worker is chosen first (its kind decides
/// the image the sandbox starts) and applied to `task.worker`; the planner chooses per
/// call. The planner's selector and the worker's share their cooldowns, so a rate limit
/// either meets keeps both away from that tool and model.
/// Without `runner.tooling`: `runner.meta` and `runner.worker` as written.
pub(crate) fn setup(
    task: &mut Task,
    model_override: Option<&str>,
    read_env: fn(&str) -> Option<String>,
) -> TaskTooling {
    let Some(config) = task.tooling.clone() else {
        let planner = Planner::from_config(
            &task.meta,
            &task.base_dir,
            model_override,
            task.planner_retries,
        );
        return TaskTooling {
            planner,
            line: None,
            worker: None,
        };
    };
    let availability = || host_availability(task.meta.api_key_env.clone(), Box::new(read_env));
    let mut selector = Selector::new(
        &config,
        SplitMix64::from_env(&read_env),
        Box::new(Instant::now),
        availability(),
    );
    let mut line = None;
    let mut worker = None;
    // A profile without a `worker` block leaves `runner.worker` alone (`meta`'s
    // candidates are planner tools, not workers).
    if selector.defines(Category::Worker) {
        let chosen = selector
            .choose(Category::Worker, None)
            .map_err(|e| e.to_string())
            .and_then(|(choice, candidate)| {
                apply_worker(&task.worker, &candidate)
                    .map(|worker| (choice, worker))
                    .map_err(|e| e.to_string())
            });
        match chosen {
            Ok((choice, applied)) => {
                line = Some(format!("tooling: {choice}"));
                // Its own draws (seeded the same way), the planner's cooldowns.
                let sibling = selector.sibling(
                    SplitMix64::from_env(&read_env),
                    Box::new(Instant::now),
                    availability(),
                );
                let base = std::mem::replace(&mut task.worker, applied.clone());
                worker = Some(WorkerTooling::new(sibling, base, choice, applied));
            }
            Err(e) => {
                let error = ProviderError::Config {
                    message: format!("runner.tooling worker: {e}"),
                };
                return TaskTooling {
                    planner: Err(error),
                    line: None,
                    worker: None,
                };
            }
        }
    }
    let planner = Planner::tooled(
        selector,
        &task.meta,
        &task.base_dir,
        model_override,
        task.planner_retries,
    );
    TaskTooling {
        planner,
        line,
        worker,
    }
}
