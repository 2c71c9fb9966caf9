//! The engine's built-in task actions: register a plan, complete a task with its
//! checklist, require that all tasks are done. Pure: they change an [`Instance`]'s task
//! list or report a failure outcome with its placeholder values.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::instance::{ChecklistItem, Instance, Task};

/// How a built-in action failed: its failure outcome (a key of the registry's `outcomes`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BuiltinFailure {
    pub name: &'static str,
    pub args: Map<String, Value>,
}

fn outcome(name: &'static str, args: &[(&str, Value)]) -> BuiltinFailure {
    BuiltinFailure {
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
///
/// A plan declares work, it never claims it: a task enters the list `pending`, and only
/// `tasks.complete` (the flow, with its checked evidence) marks one completed. So a task
/// submitted as anything but `pending` must be one this session already completed, and
/// it is kept exactly as it was (its checklist and evidence, not the submitted copy). A
/// completed task may be reopened as `pending` (a failed verification sends it back): that
/// only adds work, which the flow checks again. A completed task the re-plan leaves out is
/// kept, before the submitted ones, so its evidence is never lost.
/// `task_counters` are the names of the contract's task-scoped counters: every task starts
/// with each at zero, so guards never read `null` for them.
pub(crate) fn register(
    instance: &mut Instance,
    args: &Map<String, Value>,
    task_counters: &[&str],
) -> Result<(), BuiltinFailure> {
    let submitted = args
        .get("tasks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if submitted.is_empty() {
        return Err(outcome("empty_tasks", &[]));
    }
    let completed_before = |id: &str| {
        instance
            .tasks
            .iter()
            .find(|old| old.id == id && old.status == COMPLETED)
    };
    let mut tasks = Vec::with_capacity(submitted.len());
    for t in &submitted {
        let id = str_field(t, "id").unwrap_or_default();
        if tasks.iter().any(|x: &Task| x.id == id) {
            return Err(outcome("duplicate_task_ids", &[]));
        }
        let status = str_field(t, "status").unwrap_or_else(|| "pending".into());
        let task_id = || [("task_id", Value::String(id.clone()))];
        if status != "pending" {
            match completed_before(&id) {
                Some(done) => {
                    tasks.push(done.clone());
                    continue;
                }
                None => return Err(outcome("completion_not_earned", &task_id())),
            }
        }
        let checklist = parse_checklist(t.get("checklist"));
        if checklist.is_empty() {
            return Err(outcome("checklist_required", &task_id()));
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
    let left_out: Vec<Task> = instance
        .tasks
        .iter()
        .filter(|old| old.status == COMPLETED && !tasks.iter().any(|t| t.id == old.id))
        .cloned()
        .collect();
    tasks.splice(0..0, left_out);
    instance.tasks = tasks;
    Ok(())
}

/// The status only `tasks.complete` gives.
const COMPLETED: &str = "completed";

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
pub(crate) fn complete(
    instance: &mut Instance,
    args: &Map<String, Value>,
) -> Result<(), BuiltinFailure> {
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
    task.status = COMPLETED.into();
    Ok(())
}

/// `tasks.require_all_complete`: tasks exist and none is pending.
pub(crate) fn require_all_complete(instance: &Instance) -> Result<(), BuiltinFailure> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn instance() -> Instance {
        serde_json::from_value(json!({
            "contract": "c", "state": "S", "flags": {}, "intent": "i", "locale": "en",
            "params": {}, "counters": {}, "tasks": [], "vars": {}, "summaries": [],
            "steps_taken": 0
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn plan(tasks: &[(&str, &str)]) -> Map<String, Value> {
        let tasks: Vec<Value> = tasks
            .iter()
            .map(|(id, status)| {
                json!({"id": id, "description": format!("do {id}"), "status": status,
                       "checklist": [{"item": format!("{id} item")}]})
            })
            .collect();
        json!({ "tasks": tasks })
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    fn refused(instance: &mut Instance, tasks: &[(&str, &str)]) -> (&'static str, Value) {
        let before = instance.clone();
        let outcome = register(instance, &plan(tasks), &["failure_count"])
            .err()
            .unwrap_or_else(|| panic!("accepted {tasks:?}"));
        assert_eq!(*instance, before, "a refused plan changed the instance");
        let task = outcome.args.get("task_id").cloned().unwrap_or(Value::Null);
        (outcome.name, task)
    }

    /// Completes `id` the way the flow does, with evidence.
    fn complete_task(instance: &mut Instance, id: &str) {
        let report = json!({"task_id": id, "checklist": [
            {"item": format!("{id} item"), "status": "done", "evidence": "src/a.rs:1"}
        ]});
        complete(instance, report.as_object().unwrap_or(&Map::new()))
            .unwrap_or_else(|e| panic!("{e:?}"));
    }

    #[test]
    fn a_plan_cannot_declare_a_task_completed() {
        let mut i = instance();
        assert_eq!(
            refused(&mut i, &[("t1", "completed"), ("t2", "pending")]),
            ("completion_not_earned", json!("t1"))
        );
        assert_eq!(
            refused(&mut i, &[("t1", "done"), ("t2", "pending")]),
            ("completion_not_earned", json!("t1"))
        );
        assert_eq!(
            refused(&mut i, &[("t1", "completed")]),
            ("completion_not_earned", json!("t1"))
        );
    }

    #[test]
    fn a_re_plan_keeps_completed_tasks_and_cannot_flip_pending_ones() {
        let mut i = instance();
        register(&mut i, &plan(&[("t1", "pending"), ("t2", "pending")]), &[])
            .unwrap_or_else(|e| panic!("{e:?}"));
        complete_task(&mut i, "t1");
        let done = i.tasks[0].clone();
        assert_eq!(done.status, "completed");

        // t2 was never completed: a re-plan cannot flip it.
        assert_eq!(
            refused(
                &mut i,
                &[("t1", "completed"), ("t2", "completed"), ("t3", "pending")]
            ),
            ("completion_not_earned", json!("t2"))
        );

        // The submitted copy of a completed task does not replace the flow's record.
        let mut changed = plan(&[("t1", "completed"), ("t3", "pending")]);
        changed["tasks"][0]["checklist"] = json!([{"item": "something else"}]);
        changed["tasks"][0]["description"] = json!("rewritten");
        register(&mut i, &changed, &[]).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(i.tasks[0], done);
        assert_eq!(i.tasks[1].id, "t3");

        // A completed task the re-plan leaves out is kept, first.
        register(&mut i, &plan(&[("t4", "pending")]), &[]).unwrap_or_else(|e| panic!("{e:?}"));
        let ids: Vec<(&str, &str)> = i
            .tasks
            .iter()
            .map(|t| (t.id.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(ids, [("t1", "completed"), ("t4", "pending")]);

        // Reopening a completed task only adds work: it is pending again, to be done anew.
        register(&mut i, &plan(&[("t1", "pending")]), &[]).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(i.tasks[0].is_pending() && i.tasks[0].checklist[0].evidence.is_none());
    }
}
