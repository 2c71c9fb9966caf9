//! Sets a task up under its `runner.tooling` (see [`super::tooling`]): the worker chosen
//! once and the planner that chooses per call. Apart from `tooling` itself so that the
//! selector does not depend on the planner it serves.

use std::time::Instant;

use super::protocol::planner::Planner;
use super::provider::ProviderError;
use super::task::Task;
use super::tooling::{Category, Selector, SplitMix64, apply_worker, host_availability};

/// Sets a task up under its `runner.tooling`: the worker is chosen once (its kind decides
/// the image the sandbox starts) and applied to `task.worker`; the planner chooses per
/// call. Returns the planner and a line for the timeline naming the worker's choice.
/// Without `runner.tooling`: `runner.meta` and `runner.worker` as written.
pub(crate) fn setup(
    task: &mut Task,
    model_override: Option<&str>,
    read_env: fn(&str) -> Option<String>,
) -> (Result<Planner, ProviderError>, Option<String>) {
    let Some(config) = task.tooling.clone() else {
        let planner = Planner::from_config(
            &task.meta,
            &task.base_dir,
            model_override,
            task.planner_retries,
        );
        return (planner, None);
    };
    let mut selector = Selector::new(
        &config,
        SplitMix64::from_env(&read_env),
        Box::new(Instant::now),
        host_availability(task.meta.api_key_env.clone(), Box::new(read_env)),
    );
    let mut line = None;
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
            Ok((choice, worker)) => {
                task.worker = worker;
                line = Some(format!("tooling: {choice}"));
            }
            Err(e) => {
                let error = ProviderError::Config {
                    message: format!("runner.tooling worker: {e}"),
                };
                return (Err(error), None);
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
    (planner, line)
}
