//! The engine's built-in task actions: register a plan, complete a task with its
//! checklist, require that all tasks are done. Pure: they change an [`Instance`]'s task
//! list or report a failure outcome with its placeholder values.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::instance::{ChecklistItem, Instance, Task};

/// A failure outcome of a built-in action (a key of the registry's `outcomes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub name: &'static str,
    pub args: Map<String, Value>,
}

fn outcome(name: &'static str, args: &[(&str, Value)]) -> Outcome {
    Outcome {
        name,
        args: args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect(),
    }
}

/// The minimum length of a `skipped` item's reason (v1.16).
pub(crate) const MIN_REASON_CHARS: usize = 10;

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

fn parse_checklist(v: Option<&Value>) -> Vec<ChecklistItem> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|it| ChecklistItem {
                    item: str_field(it, "item").unwrap_or_default(),
                    status: str_field(it, "status").unwrap_or_else(|| "pending".into()),
                    evidence: str_field(it, "evidence"),
                    reason: str_field(it, "reason"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `tasks.register`: replaces the task list with a complete new one (idempotent). Per-task
/// counters of ids that already existed are kept, so a re-plan cannot reset a failure
/// count by forgetting to copy it (a bug of the original).
/// `task_counters` are the names of the contract's task-scoped counters: every task starts
/// with each at zero, so guards never read `null` for them.
pub(crate) fn register(
    instance: &mut Instance,
    args: &Map<String, Value>,
    task_counters: &[&str],
) -> Result<(), Outcome> {
    let submitted = args
        .get("tasks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if submitted.is_empty() {
        return Err(outcome("empty_tasks", &[]));
    }
    let mut tasks = Vec::with_capacity(submitted.len());
    for t in &submitted {
        let id = str_field(t, "id").unwrap_or_default();
        if tasks.iter().any(|x: &Task| x.id == id) {
            return Err(outcome("duplicate_task_ids", &[]));
        }
        let status = str_field(t, "status").unwrap_or_else(|| "pending".into());
        let checklist = parse_checklist(t.get("checklist"));
        if status == "pending" && checklist.is_empty() {
            return Err(outcome(
                "checklist_required",
                &[("task_id", Value::String(id))],
            ));
        }
        let mut counters = instance
            .tasks
            .iter()
            .find(|old| old.id == id)
            .map(|old| old.counters.clone())
            .unwrap_or_default();
        for name in task_counters {
            counters.entry((*name).to_string()).or_insert(0);
        }
        tasks.push(Task {
            id,
            description: str_field(t, "description").unwrap_or_default(),
            status,
            checklist,
            revert_reason: str_field(t, "revert_reason"),
            counters,
        });
    }
    if !tasks.iter().any(Task::is_pending) {
        return Err(outcome("no_pending_tasks", &[]));
    }
    instance.tasks = tasks;
    Ok(())
}

/// Whether `evidence` is `path:line` or `path:line-line` with 1 ≤ line ≤ end.
pub(crate) fn evidence_format_ok(evidence: &str) -> bool {
    let Some((path, lines)) = evidence.rsplit_once(':') else {
        return false;
    };
    if path.trim().is_empty() {
        return false;
    }
    let (start, end) = match lines.split_once('-') {
        Some((a, b)) => (a, b),
        None => (lines, lines),
    };
    match (start.parse::<u64>(), end.parse::<u64>()) {
        (Ok(s), Ok(e)) => s >= 1 && e >= s,
        _ => false,
    }
}

/// `tasks.complete`: completes the first pending task after checking the reported
/// checklist item by item against the registered one (v1.16, without its bypasses: the
/// checklist is always required and unknown statuses never pass).
pub fn complete(instance: &mut Instance, args: &Map<String, Value>) -> Result<(), Outcome> {
    let task_id = args
        .get("task_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if instance.tasks.is_empty() {
        return Err(outcome("no_tasks", &[]));
    }
    let Some(index) = instance.tasks.iter().position(|t| t.id == task_id) else {
        return Err(outcome(
            "unknown_task",
            &[("task_id", Value::String(task_id))],
        ));
    };
    if !instance.tasks[index].is_pending() {
        return Err(outcome(
            "already_completed",
            &[("task_id", Value::String(task_id))],
        ));
    }
    if let Some(expected) = instance.tasks.iter().find(|t| t.is_pending())
        && expected.id != task_id
    {
        return Err(outcome(
            "wrong_order",
            &[
                ("expected_task", Value::String(expected.id.clone())),
                ("task_id", Value::String(task_id)),
            ],
        ));
    }
    let reported = parse_checklist(args.get("checklist"));
    let registered = &instance.tasks[index].checklist;
    if reported.is_empty() {
        return Err(outcome(
            "checklist_required",
            &[("task_id", Value::String(task_id))],
        ));
    }
    fn count(list: &[ChecklistItem]) -> BTreeMap<&str, usize> {
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for it in list {
            *m.entry(it.item.as_str()).or_default() += 1;
        }
        m
    }
    if count(registered) != count(&reported) {
        return Err(outcome(
            "checklist_items_mismatch",
            &[("task_id", Value::String(task_id))],
        ));
    }
    for it in &reported {
        let item = Value::String(it.item.clone());
        match it.status.as_str() {
            "done" => match &it.evidence {
                None => return Err(outcome("checklist_evidence_required", &[("item", item)])),
                Some(e) if e.trim().is_empty() => {
                    return Err(outcome("checklist_evidence_required", &[("item", item)]));
                }
                Some(e) if !evidence_format_ok(e) => {
                    return Err(outcome(
                        "checklist_evidence_format_invalid",
                        &[("evidence", Value::String(e.clone()))],
                    ));
                }
                Some(_) => {}
            },
            "skipped" => {
                if it.reason.as_deref().map_or(0, |r| r.trim().chars().count()) < MIN_REASON_CHARS {
                    return Err(outcome("checklist_reason_required", &[("item", item)]));
                }
            }
            _ => return Err(outcome("checklist_item_pending", &[("item", item)])),
        }
    }
    let task = &mut instance.tasks[index];
    task.checklist = reported;
    task.status = "completed".into();
    Ok(())
}

/// `tasks.require_all_complete`: tasks exist and none is pending.
pub(crate) fn require_all_complete(instance: &Instance) -> Result<(), Outcome> {
    if instance.tasks.is_empty() {
        return Err(outcome("no_tasks_registered", &[]));
    }
    let pending = instance.tasks.iter().filter(|t| t.is_pending()).count();
    if pending > 0 {
        return Err(outcome(
            "incomplete_tasks",
            &[("count", Value::from(pending))],
        ));
    }
    Ok(())
}
