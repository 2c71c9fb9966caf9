//! Multiverse's plan and its `plan_patch`: `Plan::check` finds every broken invariant by
//! its key, stays linear on big and deep plans; the patches of
//! `tests/fixtures/multiverse/patches/*.json` (a cycle, an unknown parent, a deleted
//! running task, forward references, splicing deletes, ...) apply to exactly the expected
//! plan and summary or are refused with exactly the expected reasons; the committed schema
//! judges planner replies as the serde types do; and property tests run random patch
//! sequences, valid and invalid, on random plans: the plan stays valid, a refused patch
//! changes nothing, a create undone by deletes gives the plan back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use code_intel::multiverse::{
    Conflict, Create, Delete, DetailedQuestion, Move, Operation, PatchContext, PatchErrors, Plan,
    PlanFinding, PlanPatch, Position, Question, TaskDesign, TaskId, Update, apply_patch,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::repo;

const NOW: &str = "2026-01-01T00:00:00Z";

fn id(text: &str) -> TaskId {
    TaskId::parse(text).unwrap()
}

fn design(task: &str, deps: &[&str]) -> TaskDesign {
    serde_json::from_value(json!({
        "id": task,
        "title": task,
        "dependencies": deps,
        "created_at": NOW,
        "updated_at": NOW,
        "created_by": "user",
    }))
    .unwrap()
}

/// A plan from `(id, parent, dependencies)` in WBS order.
fn plan_of(entries: &[(&str, Option<&str>, &[&str])]) -> Plan {
    let mut plan = Plan::default();
    for (task, parent, deps) in entries {
        plan.tasks.insert(id(task), design(task, deps));
        match parent {
            None => plan.wbs.roots.push(id(task)),
            Some(parent) => plan
                .wbs
                .children
                .entry(id(parent))
                .or_default()
                .push(id(task)),
        }
    }
    plan
}

fn context(running: &[TaskId]) -> PatchContext {
    PatchContext {
        running: running.iter().cloned().collect(),
        now: "2026-01-02T00:00:00Z".into(),
        author: "chat:test".into(),
        id_prefix: "n".into(),
    }
}

fn keys(findings: &[PlanFinding]) -> Vec<&'static str> {
    findings.iter().map(PlanFinding::key).collect()
}

// ---------------------------------------------------------------------------------------
// Plan::check

#[test]
fn a_valid_plan_has_no_finding_and_its_walks_agree() {
    let plan = plan_of(&[
        ("a", None, &[]),
        ("b", Some("a"), &["a"]),
        ("c", Some("a"), &["b"]),
        ("d", Some("c"), &[]),
        ("e", None, &["c", "d"]),
    ]);
    assert_eq!(plan.check(), vec![]);
    let names = |ids: Vec<&TaskId>| ids.iter().map(|i| i.to_string()).collect::<Vec<_>>();
    assert_eq!(names(plan.wbs_order()), ["a", "b", "c", "d", "e"]);
    assert_eq!(names(plan.subtree(&id("c"))), ["c", "d"]);
    assert_eq!(names(plan.subtree(&id("a"))), ["a", "b", "c", "d"]);
    assert!(plan.subtree(&id("zz")).is_empty());
    assert_eq!(names(plan.dependents(&id("c"))), ["e"]);
    assert_eq!(names(plan.dependents(&id("a"))), ["b"]);
    let order = names(plan.topological_order().unwrap());
    let at = |t: &str| order.iter().position(|o| o == t).unwrap();
    for (task, deps) in [("b", ["a"].as_slice()), ("c", &["b"]), ("e", &["c", "d"])] {
        for dep in deps {
            assert!(at(dep) < at(task), "{dep} before {task}: {order:?}");
        }
    }
    assert_eq!(plan.parent_of(&id("d")), Some(Some(&id("c"))));
    assert_eq!(plan.parent_of(&id("a")), Some(None));
    let parents = plan.parents();
    assert_eq!(parents.len(), 5);
    for task in plan.tasks.keys() {
        assert_eq!(parents.get(task).copied(), plan.parent_of(task), "{task}");
    }
}

#[test]
fn every_broken_invariant_is_found_with_its_key_and_ids() {
    // Dependencies: unknown, twice, a cycle of two, a task depending on itself.
    let mut plan = plan_of(&[
        ("a", None, &["ghost", "b"]),
        ("b", None, &["a"]),
        ("c", None, &["d", "d"]),
        ("d", None, &[]),
        ("s", None, &["s"]),
    ]);
    let findings = plan.check();
    assert_eq!(
        keys(&findings),
        [
            "unknown-dependency",
            "duplicate-dependency",
            "dependency-cycle",
            "dependency-cycle"
        ],
        "{findings:?}"
    );
    assert_eq!(
        findings[2],
        PlanFinding::DependencyCycle {
            ids: vec![id("a"), id("b")]
        }
    );
    assert_eq!(
        findings[3],
        PlanFinding::DependencyCycle { ids: vec![id("s")] }
    );
    assert_eq!(findings[0].ids(), [&id("a"), &id("ghost")]);
    assert!(plan.topological_order().is_none());
    assert_eq!(findings[2].to_string(), "dependency cycle: a → b → a");

    // The WBS: a node that is no task, a task placed twice, one placed nowhere, children
    // of nothing, an empty list, a cycle of ancestors, a design under another key.
    plan = plan_of(&[("a", None, &[]), ("b", Some("a"), &[])]);
    plan.wbs.roots.push(id("ghost"));
    plan.wbs.roots.push(id("b"));
    plan.tasks.insert(id("lost"), design("lost", &[]));
    plan.wbs.children.insert(id("nobody"), vec![]);
    plan.tasks.insert(id("x"), design("x", &[]));
    plan.tasks.insert(id("y"), design("y", &[]));
    plan.wbs.children.insert(id("x"), vec![id("y")]);
    plan.wbs.children.insert(id("y"), vec![id("x")]);
    plan.tasks.insert(id("k"), design("other", &[]));
    plan.wbs.roots.push(id("k"));
    let findings = plan.check();
    assert_eq!(
        keys(&findings),
        [
            "id-mismatch",
            "wbs-unknown-parent",
            "wbs-empty-children",
            "task-placed-twice",
            "wbs-node-not-a-task",
            "task-not-in-wbs",
            "wbs-cycle",
        ],
        "{findings:?}"
    );
    assert!(findings.contains(&PlanFinding::TaskPlacedTwice { id: id("b") }));
    assert!(findings.contains(&PlanFinding::TaskNotInWbs { id: id("lost") }));
    assert!(findings.contains(&PlanFinding::WbsCycle {
        ids: vec![id("x"), id("y")]
    }));
    // The walks still end, each node once.
    let order = plan.wbs_order();
    assert_eq!(order.len(), plan.tasks.len());
    assert_eq!(
        serde_json::to_value(&findings[6]).unwrap(),
        json!({"key": "wbs-cycle", "ids": ["x", "y"]})
    );
}

/// A chain 10,000 deep, in the WBS and in the dependencies: no recursion to overflow, and
/// the cycle that closes it is reported whole.
#[test]
// The time taken is the test's report.
#[allow(clippy::print_stdout)]
fn a_ten_thousand_deep_chain_checks_without_recursion() {
    let n = 10_000;
    let ids: Vec<TaskId> = (0..n).map(|i| id(&format!("t{i}"))).collect();
    let mut plan = Plan::default();
    plan.wbs.roots.push(ids[0].clone());
    for i in 0..n {
        let deps: Vec<&str> = if i == 0 {
            vec![]
        } else {
            vec![ids[i - 1].as_str()]
        };
        plan.tasks
            .insert(ids[i].clone(), design(ids[i].as_str(), &deps));
        if i + 1 < n {
            plan.wbs
                .children
                .insert(ids[i].clone(), vec![ids[i + 1].clone()]);
        }
    }
    let started = Instant::now();
    assert_eq!(plan.check(), vec![]);
    let took = started.elapsed();
    assert_eq!(plan.wbs_order().len(), n);
    assert_eq!(plan.subtree(&ids[0]).len(), n);
    assert_eq!(plan.topological_order().unwrap().len(), n);
    // Close the chain: t0 depends on the last.
    plan.tasks.get_mut(&ids[0]).unwrap().dependencies = vec![ids[n - 1].clone()];
    let findings = plan.check();
    assert_eq!(keys(&findings), ["dependency-cycle"]);
    assert_eq!(findings[0].ids().len(), n);
    println!("check of a {n}-deep chain: {took:?}");
}

/// A plan of `n` tasks: each under the root or an earlier task, depending on up to three
/// earlier ones.
fn wide_plan(n: usize, seed: u64) -> Plan {
    let mut rng = Rng(seed | 1);
    let mut plan = Plan::default();
    for i in 0..n {
        let task = format!("t{i}");
        let deps: BTreeSet<String> = (0..rng.below(4))
            .filter(|_| i > 0)
            .map(|_| format!("t{}", rng.below(i as u64)))
            .collect();
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        plan.tasks.insert(id(&task), design(&task, &deps));
        if i == 0 || rng.below(4) == 0 {
            plan.wbs.roots.push(id(&task));
        } else {
            let parent = format!("t{}", rng.below(i as u64));
            plan.wbs
                .children
                .entry(id(&parent))
                .or_default()
                .push(id(&task));
        }
    }
    plan
}

#[test]
// The times taken are the test's report.
#[allow(clippy::print_stdout)]
fn a_thousand_task_plan_checks_and_patches_quickly() {
    let plan = wide_plan(1_000, 7);
    assert_eq!(plan.check(), vec![]);
    let mut best = Duration::MAX;
    for _ in 0..20 {
        let started = Instant::now();
        let findings = plan.check();
        best = best.min(started.elapsed());
        assert!(findings.is_empty());
    }
    // A patch of the largest size: 200 operations.
    let operations: Vec<Operation> = (0..200)
        .map(|i| match i % 4 {
            0 => Operation::Create(create(
                &format!("c{i}"),
                Some(&format!("t{i}")),
                &[&format!("t{}", i + 1)],
            )),
            1 => Operation::Update(Update {
                task_id: format!("t{i}"),
                title: Some(format!("renamed {i}")),
                ..Update::default()
            }),
            2 => Operation::Move(Move {
                task_id: format!("t{}", 500 + i),
                parent_id: None,
                position: Some(Position::Index(0)),
            }),
            _ => Operation::Delete(Delete {
                task_id: format!("t{}", 700 + i),
                cascade: false,
            }),
        })
        .collect();
    let patch = PlanPatch {
        understanding: "many changes".into(),
        operations,
        questions: vec![],
        conflicts: vec![],
    };
    let started = Instant::now();
    let (patched, summary) = apply_patch(&plan, &patch, &context(&[])).unwrap();
    let apply_took = started.elapsed();
    assert_eq!(patched.check(), vec![]);
    assert_eq!(summary.created.len(), 50);
    assert_eq!(summary.deleted.len(), 50);
    println!(
        "1,000-task plan: check {best:?} (best of 20), a 200-operation patch applied in {apply_took:?}"
    );
    // Generous for an unoptimised build on a shared machine; the release figure is printed.
    assert!(best < Duration::from_millis(50), "{best:?}");
    assert!(apply_took < Duration::from_millis(500), "{apply_took:?}");
}

fn create(temp_id: &str, parent: Option<&str>, deps: &[&str]) -> Create {
    Create {
        temp_id: temp_id.into(),
        title: format!("task {temp_id}"),
        description: String::new(),
        acceptance_criteria: vec![],
        dependencies: deps.iter().map(|d| d.to_string()).collect(),
        suggested_impl: None,
        milestone: None,
        phase: None,
        pool: None,
        priority: None,
        parent_id: parent.map(str::to_string),
        position: None,
    }
}

// ---------------------------------------------------------------------------------------
// Fixtures

/// Where the fixtures are, relative to the repository root.
const FIXTURES: &str = "tests/fixtures/multiverse/patches";

fn fixture_plan(entries: &Value) -> Plan {
    let mut plan = Plan::default();
    for entry in entries.as_array().unwrap() {
        let task = entry["id"].as_str().unwrap();
        let deps: Vec<&str> = entry["deps"]
            .as_array()
            .map(|d| d.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        plan.tasks.insert(id(task), design(task, &deps));
        match entry["parent"].as_str() {
            None => plan.wbs.roots.push(id(task)),
            Some(parent) => plan
                .wbs
                .children
                .entry(id(parent))
                .or_default()
                .push(id(task)),
        }
    }
    assert_eq!(plan.check(), vec![], "a fixture's plan must be valid");
    plan
}

/// The patched plan as a fixture states it: the WBS depth first with parents, and every
/// non-empty dependency list.
fn fixture_outcome(plan: &Plan) -> (Value, Value) {
    let wbs: Vec<Value> = plan
        .wbs_order()
        .into_iter()
        .map(|task| json!([task, plan.parent_of(task).flatten()]))
        .collect();
    let dependencies: BTreeMap<&TaskId, &Vec<TaskId>> = plan
        .tasks
        .iter()
        .filter(|(_, d)| !d.dependencies.is_empty())
        .map(|(k, d)| (k, &d.dependencies))
        .collect();
    (json!(wbs), json!(dependencies))
}

#[test]
fn patch_fixtures_apply_or_refuse_as_stated() {
    let mut paths: Vec<_> = std::fs::read_dir(repo().join(FIXTURES))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 9, "{paths:?}");
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let plan = fixture_plan(&case["plan"]);
        let before = serde_json::to_string(&plan).unwrap();
        let running: Vec<TaskId> = case["running"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| id(v.as_str().unwrap()))
            .collect();
        let patch: PlanPatch = serde_json::from_value(case["patch"].clone())
            .unwrap_or_else(|e| panic!("{name}: the patch does not parse: {e}"));
        let expect = &case["expect"];
        match (
            apply_patch(&plan, &patch, &context(&running)),
            expect.get("errors"),
        ) {
            (Err(errors), Some(expected)) => {
                let got = serde_json::to_value(&errors).unwrap();
                if got != *expected {
                    failures.push(format!(
                        "{name}: errors\n  got      {got}\n  expected {expected}"
                    ));
                }
                // Every reason is in the text the chat shows.
                let text = errors.to_string();
                assert_eq!(text.lines().count(), errors.0.len() + 1, "{text}");
            }
            (Ok((patched, summary)), None) => {
                assert_eq!(patched.check(), vec![], "{name}");
                let (wbs, dependencies) = fixture_outcome(&patched);
                let summary = serde_json::to_value(&summary).unwrap();
                for (what, got, expected) in [
                    ("wbs", wbs, &expect["wbs"]),
                    ("dependencies", dependencies, &expect["dependencies"]),
                    ("summary", summary, &expect["summary"]),
                ] {
                    if got != *expected {
                        failures.push(format!(
                            "{name}: {what}\n  got      {got}\n  expected {expected}"
                        ));
                    }
                }
            }
            (Err(errors), None) => failures.push(format!("{name}: refused: {errors}")),
            (Ok((_, summary)), Some(_)) => {
                failures.push(format!("{name}: applied, expected a refusal: {summary:?}"))
            }
        }
        // A pure function: the plan given is never touched, applied or refused.
        assert_eq!(serde_json::to_string(&plan).unwrap(), before, "{name}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn applied_designs_carry_the_patch_fields_and_the_context() {
    let plan = plan_of(&[("a", None, &[]), ("b", None, &[])]);
    let patch: PlanPatch = serde_json::from_value(json!({
        "understanding": "u",
        "operations": [
            {"op": "create", "temp_id": "x", "title": " New ", "description": "d",
             "acceptance_criteria": ["c1"], "pool": "test", "priority": -1, "phase": "p",
             "suggested_impl": {"language": "rust", "constraints": ["no unsafe"]}},
            {"op": "update", "task_id": "a", "description": "D", "acceptance_criteria": [],
             "dependencies": ["x"], "phase": "P", "pool": "codegen"},
            {"op": "update", "task_id": "a", "phase": ""}
        ]
    }))
    .unwrap();
    let (patched, summary) = apply_patch(&plan, &patch, &context(&[])).unwrap();
    let x = &patched.tasks[&id("n1")];
    assert_eq!(x.title, "New");
    assert_eq!(x.description, "d");
    assert_eq!(x.acceptance_criteria, ["c1"]);
    assert_eq!((x.pool.as_str(), x.priority), ("test", -1));
    assert_eq!(x.phase.as_deref(), Some("p"));
    assert_eq!(
        x.suggested_impl.as_ref().unwrap().constraints,
        ["no unsafe"]
    );
    assert_eq!(
        (x.created_by.as_str(), x.created_at.as_str()),
        ("chat:test", "2026-01-02T00:00:00Z")
    );
    let a = &patched.tasks[&id("a")];
    assert_eq!(a.description, "D");
    assert!(a.acceptance_criteria.is_empty());
    assert_eq!(a.dependencies, [id("n1")]);
    assert_eq!(a.phase, None, "\"\" clears a facet");
    assert_eq!(a.pool, "codegen");
    assert_eq!(a.updated_at, "2026-01-02T00:00:00Z");
    assert_eq!(a.created_at, NOW);
    assert_eq!(patched.tasks[&id("b")], plan.tasks[&id("b")]);
    assert_eq!(summary.updated, [id("a")]);
    // The default pool when the create names none; ids skip those in use.
    let plan = plan_of(&[("n1", None, &[]), ("n3", None, &[])]);
    let patch = PlanPatch {
        understanding: String::new(),
        operations: vec![
            Operation::Create(create("p", None, &[])),
            Operation::Create(create("q", None, &[])),
        ],
        questions: vec![],
        conflicts: vec![],
    };
    let (patched, summary) = apply_patch(&plan, &patch, &context(&[])).unwrap();
    let ids: Vec<&str> = summary.created.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["n2", "n4"]);
    assert_eq!(patched.tasks[&id("n2")].pool, "default");
}

#[test]
fn budgets_are_enforced_before_any_work() {
    let plan = plan_of(&[("a", None, &[])]);
    let many = PlanPatch {
        understanding: String::new(),
        operations: (0..201)
            .map(|i| Operation::Create(create(&format!("c{i}"), None, &[])))
            .collect(),
        questions: vec![],
        conflicts: vec![],
    };
    let errors = apply_patch(&plan, &many, &context(&[])).unwrap_err();
    assert_eq!(
        serde_json::to_value(&errors).unwrap(),
        json!([{"at": {"in": "patch"}, "key": "too-many-operations", "count": 201, "max": 200}])
    );
    let mut long = create("c", None, &[]);
    long.title = "x".repeat(201);
    long.acceptance_criteria = vec!["c".into(); 101];
    let patch = PlanPatch {
        understanding: "u".repeat(20_001),
        operations: vec![Operation::Create(long)],
        questions: vec![],
        conflicts: vec![],
    };
    let errors = apply_patch(&plan, &patch, &context(&[])).unwrap_err();
    let keys: Vec<(String, &'static str)> = errors
        .0
        .iter()
        .map(|e| (e.at.to_string(), e.problem.key()))
        .collect();
    assert_eq!(
        keys,
        [
            ("the patch".to_string(), "too-long"),
            ("operation 0 (create)".to_string(), "too-long"),
            ("operation 0 (create)".to_string(), "too-many-items"),
        ]
    );
    // A bad prefix cannot make ids.
    let mut ctx = context(&[]);
    ctx.id_prefix = "../".into();
    let patch = PlanPatch {
        understanding: String::new(),
        operations: vec![Operation::Create(create("c", None, &[]))],
        questions: vec![],
        conflicts: vec![],
    };
    let errors = apply_patch(&plan, &patch, &ctx).unwrap_err();
    assert_eq!(errors.0[0].problem.key(), "bad-id-prefix");
    // A broken plan is refused whole.
    let mut broken = plan.clone();
    broken.wbs.roots.push(id("a"));
    let errors = apply_patch(&broken, &patch, &context(&[])).unwrap_err();
    assert_eq!(errors.0[0].problem.key(), "plan-invalid");
}

// ---------------------------------------------------------------------------------------
// The schema and the reply

fn reply(payload: Value) -> Value {
    json!({"type": "plan_patch", "version": 1, "payload": payload})
}

#[test]
fn schema_and_types_judge_replies_alike() {
    let text =
        std::fs::read_to_string(repo().join("schemas/multiverse/plan_patch.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    // Every fixture's patch is a reply the schema and the types accept.
    for entry in std::fs::read_dir(repo().join(FIXTURES)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let reply = reply(case["patch"].clone());
        assert!(validator.is_valid(&reply), "{}", path.display());
        PlanPatch::from_reply(&reply).unwrap();
    }
    // Both refuse a field too many, an unknown operation, a missing title, a bad position.
    for payload in [
        json!({"understanding": "u", "operations": [], "extra": 1}),
        json!({"understanding": "u", "operations": [{"op": "rename", "task_id": "a"}]}),
        json!({"understanding": "u", "operations": [{"op": "create", "temp_id": "t"}]}),
        json!({"understanding": "u", "operations": [{"op": "delete", "task_id": "a", "force": true}]}),
        json!({"understanding": "u", "operations": [{"op": "move", "task_id": "a", "position": {"index": -1}}]}),
        json!({"understanding": "u", "operations": [{"op": "move", "task_id": "a", "position": {"before": "b", "after": "c"}}]}),
        json!({"understanding": "u", "conflicts": [{"file": "a.rs", "task": ["x"]}]}),
        json!({"operations": []}),
    ] {
        let reply = reply(payload.clone());
        assert!(!validator.is_valid(&reply), "schema accepts {payload}");
        assert!(
            PlanPatch::from_reply(&reply).is_err(),
            "types accept {payload}"
        );
    }
    assert!(PlanPatch::from_reply(&json!([])).is_err());
    let object = reply(json!({"understanding": "u"}));
    assert_eq!(
        PlanPatch::from_reply_object(object.as_object().unwrap())
            .unwrap()
            .understanding,
        "u"
    );
    // The envelope is checked first and named.
    let err = PlanPatch::from_reply(&json!({"type": "plan_task", "version": 1, "payload": {}}))
        .unwrap_err();
    assert!(err.to_string().contains("not \"plan_patch\""), "{err}");
    let err = PlanPatch::from_reply(&json!({"type": "plan_patch", "version": 2, "payload": {}}))
        .unwrap_err();
    assert!(err.to_string().contains("version must be 1"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Properties

/// A small deterministic generator, seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a>(&mut self, items: &'a [String]) -> Option<&'a String> {
        (!items.is_empty()).then(|| &items[self.below(items.len() as u64) as usize])
    }
}

/// A reference a random operation uses: mostly a task of the plan or a temp id of the
/// patch, sometimes nothing at all.
fn reference(rng: &mut Rng, names: &[String]) -> String {
    match rng.below(12) {
        0 => "ghost".into(),
        _ => rng.pick(names).cloned().unwrap_or_else(|| "ghost".into()),
    }
}

fn position(rng: &mut Rng, names: &[String]) -> Option<Position> {
    match rng.below(6) {
        0 => None,
        1 => Some(Position::End),
        2 => Some(Position::Index(rng.below(6) as usize)),
        3 => Some(Position::Before(reference(rng, names))),
        4 => Some(Position::After(reference(rng, names))),
        _ => Some(Position::Index(0)),
    }
}

/// A random patch against `plan`: every kind of operation, references right and wrong.
fn random_patch(rng: &mut Rng, plan: &Plan, round: usize) -> PlanPatch {
    let mut names: Vec<String> = plan.tasks.keys().map(|k| k.to_string()).collect();
    let count = rng.below(8) as usize;
    let mut operations = Vec::new();
    for i in 0..count {
        let operation = match rng.below(5) {
            0 | 1 => {
                let temp = format!("r{round}-{i}");
                let deps: Vec<String> = (0..rng.below(3)).map(|_| reference(rng, &names)).collect();
                let mut c = create(&temp, None, &[]);
                c.dependencies = deps;
                if rng.below(2) == 0 {
                    c.parent_id = Some(reference(rng, &names));
                }
                c.position = position(rng, &names);
                names.push(temp);
                Operation::Create(c)
            }
            2 => Operation::Update(Update {
                task_id: reference(rng, &names),
                title: Some(format!("t{i}")),
                dependencies: (rng.below(2) == 0)
                    .then(|| (0..rng.below(3)).map(|_| reference(rng, &names)).collect()),
                ..Update::default()
            }),
            3 => Operation::Move(Move {
                task_id: reference(rng, &names),
                parent_id: (rng.below(3) != 0).then(|| reference(rng, &names)),
                position: position(rng, &names),
            }),
            _ => Operation::Delete(Delete {
                task_id: reference(rng, &names),
                cascade: rng.below(2) == 0,
            }),
        };
        operations.push(operation);
    }
    let questions = (0..rng.below(2))
        .map(|_| {
            Question::Detailed(DetailedQuestion {
                question: "which?".into(),
                tasks: vec![reference(rng, &names)],
                options: vec![],
            })
        })
        .collect();
    let conflicts = (0..rng.below(2))
        .map(|_| Conflict {
            file: "src/lib.rs".into(),
            tasks: vec![reference(rng, &names), reference(rng, &names)],
            reason: None,
        })
        .collect();
    PlanPatch {
        understanding: format!("round {round}"),
        operations,
        questions,
        conflicts,
    }
}

fn check_outcome(
    plan: &Plan,
    patch: &PlanPatch,
    ctx: &PatchContext,
    outcome: &Result<(Plan, code_intel::multiverse::PatchSummary), PatchErrors>,
) {
    match outcome {
        Ok((patched, summary)) => {
            assert_eq!(patched.check(), vec![], "{patch:?}");
            for running in &ctx.running {
                // Not deleted, and what its attempt was started from is unchanged.
                let (before, after) = (&plan.tasks[running], &patched.tasks[running]);
                assert_eq!(
                    (
                        &before.description,
                        &before.acceptance_criteria,
                        &before.pool
                    ),
                    (&after.description, &after.acceptance_criteria, &after.pool)
                );
                if !summary
                    .removed_dependencies
                    .iter()
                    .any(|r| r.task == *running)
                {
                    assert_eq!(before.dependencies, after.dependencies, "{running}");
                }
            }
            for task in summary
                .questions
                .iter()
                .flat_map(|q| &q.tasks)
                .chain(summary.conflicts.iter().flat_map(|c| &c.tasks))
            {
                assert!(patched.tasks.contains_key(task), "{task}");
            }
            for deleted in &summary.deleted {
                assert!(!patched.tasks.contains_key(deleted));
                assert!(
                    plan.tasks.contains_key(deleted)
                        || summary.created.iter().any(|c| c.id == *deleted)
                );
            }
            for created in &summary.created {
                assert!(
                    patched.tasks.contains_key(&created.id)
                        || summary.deleted.contains(&created.id)
                );
                assert!(!plan.tasks.contains_key(&created.id));
            }
            let expected = plan.tasks.len() + summary.created.len() - summary.deleted.len();
            assert_eq!(patched.tasks.len(), expected);
        }
        Err(errors) => {
            assert!(!errors.0.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Random patch sequences keep the plan valid; a refused patch leaves the plan byte
    /// for byte as it was (the next round starts from it).
    #[test]
    fn random_patch_sequences_keep_the_plan_valid(seed in any::<u64>(), size in 0usize..25) {
        let mut rng = Rng(seed | 1);
        let mut plan = wide_plan(size, seed);

        for round in 0..12 {
            let names: Vec<TaskId> = plan.tasks.keys().cloned().collect();
            let running: Vec<TaskId> = names.iter().filter(|_| rng.below(5) == 0).cloned().collect();
            let mut ctx = context(&running);
            ctx.id_prefix = format!("p{round}-");
            let patch = random_patch(&mut rng, &plan, round);
            let before = serde_json::to_vec(&plan).unwrap();
            let outcome = apply_patch(&plan, &patch, &ctx);
            prop_assert_eq!(serde_json::to_vec(&plan).unwrap(), before);
            check_outcome(&plan, &patch, &ctx, &outcome);
            if let Ok((patched, _)) = outcome {
                plan = patched;

            }
        }

    }

    /// One bad operation anywhere in a valid patch refuses the whole patch, naming it.
    #[test]
    fn one_bad_operation_refuses_the_whole_patch(seed in any::<u64>(), size in 1usize..20, at in 0usize..6) {
        let plan = wide_plan(size, seed);
        let mut operations: Vec<Operation> = (0..5)
            .map(|i| Operation::Create(create(&format!("c{i}"), Some("t0"), &["t0"])))
            .collect();
        let at = at.min(operations.len());
        operations.insert(at, Operation::Delete(Delete { task_id: "ghost".into(), cascade: false }));
        let patch = PlanPatch { understanding: String::new(), operations, questions: vec![], conflicts: vec![] };
        let errors = apply_patch(&plan, &patch, &context(&[])).unwrap_err();
        prop_assert_eq!(errors.0.len(), 1);
        prop_assert_eq!(errors.0[0].to_string(), format!("operation {at} (delete): \"ghost\" names no task and no temp_id of this patch"));
    }

    /// Creating tasks anywhere and deleting them again (last first, without cascade) gives
    /// the plan back exactly.
    #[test]
    fn create_then_delete_round_trips(seed in any::<u64>(), size in 0usize..25, count in 1usize..10) {
        let mut rng = Rng(seed | 1);
        let plan = wide_plan(size, seed);
        let mut names: Vec<String> = plan.tasks.keys().map(|k| k.to_string()).collect();
        let mut operations = Vec::new();
        for i in 0..count {
            let temp = format!("c{i}");
            let mut c = create(&temp, None, &[]);
            if let Some(parent) = rng.pick(&names).filter(|_| rng.below(3) != 0) {
                c.parent_id = Some(parent.clone());
            }
            c.dependencies = names.iter().filter(|_| rng.below(4) == 0).cloned().collect();
            c.position = Some(Position::Index(rng.below(4) as usize));
            names.push(temp);
            operations.push(Operation::Create(c));
        }
        let patch = PlanPatch { understanding: String::new(), operations, questions: vec![], conflicts: vec![] };
        let (created, summary) = apply_patch(&plan, &patch, &context(&[])).unwrap();
        prop_assert_eq!(created.check(), vec![]);
        let deletes = PlanPatch {
            understanding: String::new(),
            operations: summary.created.iter().rev().map(|c| Operation::Delete(Delete { task_id: c.id.to_string(), cascade: false })).collect(),
            questions: vec![],
            conflicts: vec![],
        };
        let (back, summary) = apply_patch(&created, &deletes, &context(&[])).unwrap();
        prop_assert!(summary.removed_dependencies.is_empty());
        prop_assert_eq!(back, plan);
    }
}
