//! The default contract driven step by step: the happy path, every loop limit, the fixes
//! of the original's bugs, and rejections that leave the session untouched.

use code_intel::machine::{footer, phase_response};
use serde_json::{Value, json};

use crate::support::{Driver, default_contract};

fn no_stale() -> Value {
    json!({"stale_branches_exist": false, "quality_review_prompt_exists": true, "task_branch_active": true, "task_branch": "llm_task_1", "base_branch": "main", "semantic_available": true})
}

fn driver(flags: &str) -> Driver {
    Driver::start(default_contract(), flags, "IMPLEMENT", no_stale())
}

fn doc(d: &mut Driver) {
    d.ok(
        json!({"documents_reviewed": ["docs/a.md"], "tools_used": [], "summary": "rules read"}),
        &[],
        "QUERY_FRAME",
    );
}

fn frame(d: &mut Driver, next: &str) {
    d.ok(
        json!({"target_feature": {"value": "login", "quote": "fix login"}, "tools_used": [], "summary": "frame"}),
        &[],
        next,
    );
}

fn explore_to_ready(d: &mut Driver) {
    d.ok(
        json!({"explored_files": ["src/a.rs"], "findings": ["a calls b"], "tools_used": ["search_text", "find_definitions"], "summary": "explored"}),
        &["search_text", "find_definitions"],
        "Q1",
    );
    d.ok(json!({"needs_more_information": false, "reason": "exploration was enough", "tools_used": [], "summary": "no"}), &[], "Q2");
    d.ok(json!({"has_unverified_hypotheses": false, "reason": "all facts were checked", "tools_used": [], "summary": "no"}), &[], "Q3");
    d.ok(json!({"needs_impact_analysis": false, "reason": "change is local to one fn", "tools_used": [], "summary": "no"}), &[], "READY_PLAN");
}

fn plan(tasks: &[&str]) -> Value {
    let tasks: Vec<Value> = tasks
        .iter()
        .map(|id| json!({"id": id, "description": format!("do {id}"), "status": "pending", "checklist": [{"item": format!("{id} item")}]}))
        .collect();
    json!({"tasks": tasks, "tools_used": [], "summary": "plan"})
}

fn report(id: &str) -> Value {
    json!({"task_id": id, "checklist": [{"item": format!("{id} item"), "status": "done", "evidence": "src/a.rs:10-20"}], "tools_used": ["check_write_target"], "summary": format!("{id} done")})
}

fn implement(d: &mut Driver, tasks: &[&str]) {
    d.ok(plan(tasks), &[], "READY_IMPL");
    for (i, id) in tasks.iter().enumerate() {
        let next = if i + 1 == tasks.len() {
            "READY_COMPLETE"
        } else {
            "READY_IMPL"
        };
        d.ok(report(id), &["check_write_target"], next);
    }
}

fn verify(passed: bool, failed: &[&str]) -> Value {
    json!({"verifier_used": "verifiers/test.md", "passed": passed, "failed_tasks": failed, "details": if passed { "all green" } else { "test_x fails" }, "tools_used": [], "summary": "verified"})
}

fn pre_commit() -> Value {
    json!({"review_prompt_used": "garbage_detection.md", "reviewed_files": [{"path": "src/a.rs", "decision": "keep"}], "commit_message": "fix login", "tools_used": ["review_changes"], "summary": "reviewed"})
}

fn quality(issues: &[&str]) -> Value {
    json!({"quality_prompt_used": "quality_review.md", "quality_score": "A", "issues": issues, "tools_used": [], "summary": "quality"})
}

#[test]
fn happy_path_runs_all_nineteen_steps() {
    let mut d = driver("");
    assert_eq!(d.state(), "DOCUMENT_RESEARCH");
    doc(&mut d);
    frame(&mut d, "EXPLORATION");
    explore_to_ready(&mut d);
    implement(&mut d, &["t1", "t2"]);
    d.ok(json!({"summary": "all done"}), &[], "POST_IMPL_VERIFY");
    d.ok(verify(true, &[]), &[], "PRE_COMMIT");
    d.ok(pre_commit(), &["review_changes"], "QUALITY_REVIEW");
    d.ok(quality(&[]), &[], "MERGE");
    let t = d.ok(json!({"summary": "merge"}), &[], "SESSION_COMPLETE");
    assert_eq!(
        t.message.unwrap().text,
        "Merged llm_task_1 → main. Session complete."
    );
    assert_eq!(
        d.effects,
        [
            "exploration.record",
            "git.ensure_task_branch",
            "checklist.verify_evidence",
            "checklist.verify_evidence",
            "changes.require_explored",
            "git.prepare_commit",
            "git.commit_prepared",
            "git.merge",
        ]
    );
    // One summary per task: the original overwrote them (CI-B24).
    let keys: Vec<&str> = d
        .instance
        .summaries
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    assert!(
        keys.contains(&"step_13_READY_IMPL_t1") && keys.contains(&"step_13_READY_IMPL_t2"),
        "{keys:?}"
    );
    // A finished session refuses further submissions.
    d.rejected(
        json!({"summary": "again"}),
        &[],
        "common_failures.session_finished",
    );
}

#[test]
fn the_response_is_self_contained() {
    let d = driver("");
    let r = phase_response(&d.contract, &d.instance);
    assert_eq!(
        (r.phase.as_str(), r.step, r.call.as_deref()),
        ("DOCUMENT_RESEARCH", Some(3), Some("submit_phase"))
    );
    // The compaction protocol is the contract's footer, which the host sends when it
    // matters (once per session, again after a compaction), not with every instruction.
    assert!(
        !r.instruction.contains("[compaction_protocol]"),
        "{}",
        r.instruction
    );
    let footer = footer(&d.contract, &d.instance).unwrap_or_default();
    assert!(footer.starts_with("[compaction_protocol]"), "{footer}");
    assert_eq!(
        r.expected_payload["documents_reviewed"],
        json!("list[str (non-empty)] (non-empty)")
    );
    let ja = Driver::start(default_contract(), "", "IMPLEMENT", no_stale());
    let mut instance = ja.instance.clone();
    instance.locale = "ja".into();
    assert!(
        phase_response(&ja.contract, &instance)
            .instruction
            .contains("サブエージェント")
    );
}

#[test]
fn stale_branches_lead_to_branch_intervention() {
    let mut facts = no_stale();
    facts["stale_branches_exist"] = json!(true);
    let mut d = Driver::start(default_contract(), "--no-doc", "IMPLEMENT", facts);
    assert_eq!(d.state(), "BRANCH_INTERVENTION");
    d.rejected(
        json!({"choice": "keep", "tools_used": [], "summary": "x"}),
        &[],
        "failures.BRANCH_INTERVENTION.invalid_choice",
    );
    let t = d.ok(
        json!({"choice": "merge", "tools_used": [], "summary": "merged"}),
        &[],
        "QUERY_FRAME",
    );
    assert_eq!(t.effects[0].action, "git.resolve_stale_branches");
    assert_eq!(t.effects[0].args["choice"], json!("merge"));
}

#[test]
fn payload_problems_are_rejected_with_specific_messages() {
    let mut d = driver("--no-doc");
    frame(&mut d, "EXPLORATION");
    let base = json!({"explored_files": ["a"], "findings": ["b"], "tools_used": ["search_text", "get_symbols"], "summary": "s"});
    let tools = ["search_text", "get_symbols"];
    let mut p = base.clone();
    p.as_object_mut().unwrap().remove("summary");
    d.rejected(p, &tools, "common_failures.summary_required");
    let mut p = base.clone();
    p["tools_used"] = json!("search_text");
    d.rejected(p, &tools, "common_failures.tools_used_invalid");
    let mut p = base.clone();
    p["explored_files"] = json!([]);
    d.rejected(p, &tools, "failures.EXPLORATION.empty_result");
    // Only one distinct tool really called.
    d.rejected(
        base.clone(),
        &["search_text"],
        "common_failures.tools_reported_not_called",
    );
    let mut p = base.clone();
    p["tools_used"] = json!(["search_text"]);
    d.rejected(p, &["search_text"], "common_failures.exploration_min_tools");
    // A payload meant for another phase (CI-B13).
    d.rejected(json!({"needs_more_information": false, "reason": "long enough", "tools_used": [], "summary": "s"}), &tools, "common_failures.payload_mismatch");
    d.ok(base, &tools, "Q1");
    // "false" is a string, not a boolean (CI-B13).
    d.rejected(json!({"needs_more_information": "false", "reason": "long enough", "tools_used": [], "summary": "s"}), &[], "tool_errors.check_phase_necessity.semantic_needs_more_information_type");
    d.rejected(json!({"needs_more_information": false, "reason": "short", "tools_used": [], "summary": "s"}), &[], "tool_errors.check_phase_necessity.semantic_reason_length");
    // gate=auto and true -> SEMANTIC, which requires semantic_search to be called and reported.
    d.ok(json!({"needs_more_information": true, "reason": "need more context", "tools_used": [], "summary": "s"}), &[], "SEMANTIC");
    let sem = json!({"search_query": "login", "search_results": ["auth.rs"], "tools_used": ["semantic_search"], "summary": "s"});
    d.rejected(sem.clone(), &[], "common_failures.required_tools_not_used");
    let mut p = sem.clone();
    p["tools_used"] = json!([]);
    d.rejected(
        p,
        &["semantic_search"],
        "common_failures.required_tools_not_reported",
    );
    d.ok(sem, &["semantic_search"], "Q2");
    d.ok(json!({"has_unverified_hypotheses": true, "reason": "one guess left open", "tools_used": [], "summary": "s"}), &[], "VERIFICATION");
    let hyp = |result: bool| json!({"hypotheses_verified": [{"hypothesis": "h", "result": result, "evidence": "a.rs:1"}], "tools_used": [], "summary": "s"});
    d.rejected(hyp(false), &[], "failures.VERIFICATION.result_false_exists");
    d.ok(hyp(true), &[], "Q3");
}

#[test]
fn gate_full_runs_every_optional_phase() {
    let mut d = driver("--gate=full --no-doc");
    frame(&mut d, "EXPLORATION");
    d.ok(json!({"explored_files": ["a"], "findings": ["b"], "tools_used": ["search_text", "get_symbols"], "summary": "s"}), &["search_text", "get_symbols"], "Q1");
    d.ok(json!({"needs_more_information": false, "reason": "it is clear enough", "tools_used": [], "summary": "s"}), &[], "SEMANTIC");
}

#[test]
fn investigation_ends_after_the_gates() {
    let mut d = Driver::start(default_contract(), "--no-doc", "INVESTIGATE", no_stale());
    frame(&mut d, "EXPLORATION");
    d.ok(json!({"explored_files": ["a"], "findings": ["b"], "tools_used": ["search_text", "get_symbols"], "summary": "s"}), &["search_text", "get_symbols"], "Q1");
    d.ok(json!({"needs_more_information": false, "reason": "exploration was enough", "tools_used": [], "summary": "s"}), &[], "Q2");
    d.ok(json!({"has_unverified_hypotheses": false, "reason": "all facts were checked", "tools_used": [], "summary": "s"}), &[], "Q3");
    let t = d.ok(json!({"needs_impact_analysis": false, "reason": "nothing will change", "tools_used": [], "summary": "s"}), &[], "SESSION_COMPLETE");
    assert_eq!(t.message.unwrap().key, "success.Q3.investigation_complete");
}

#[test]
fn task_rules_are_enforced() {
    let mut d = driver("--fast --no-doc");
    frame(&mut d, "READY_PLAN");
    d.rejected(
        json!({"tasks": [], "tools_used": [], "summary": "p"}),
        &[],
        "failures.READY.empty_tasks",
    );
    let mut dup = plan(&["t1", "t1"]);
    dup["summary"] = json!("dup");
    d.rejected(dup, &[], "failures.READY.duplicate_task_ids");
    // A plan declares work; it cannot claim a task done, alone or before pending ones.
    let mut done = plan(&["t1"]);
    done["tasks"][0]["status"] = json!("completed");
    d.rejected(done, &[], "failures.READY.completion_not_earned");
    let mut first_done = plan(&["t1", "t2"]);
    first_done["tasks"][0]["status"] = json!("completed");
    d.rejected(first_done, &[], "failures.READY.completion_not_earned");
    let mut empty_checklist = plan(&["t1"]);
    empty_checklist["tasks"][0]["checklist"] = json!([]);
    d.rejected(empty_checklist, &[], "failures.READY.empty_tasks");
    d.ok(plan(&["t1", "t2"]), &[], "READY_IMPL");
    d.rejected(
        report("t2"),
        &["check_write_target"],
        "failures.READY.wrong_order",
    );
    d.rejected(
        report("zz"),
        &["check_write_target"],
        "failures.READY.unknown_task",
    );
    d.rejected(report("t1"), &[], "common_failures.required_tools_not_used");
    let mut r = report("t1");
    r["checklist"][0]["item"] = json!("something else");
    d.rejected(
        r,
        &["check_write_target"],
        "failures.READY.checklist_items_mismatch",
    );
    let mut r = report("t1");
    r["checklist"][0] = json!({"item": "t1 item", "status": "done"});
    d.rejected(
        r,
        &["check_write_target"],
        "failures.READY.checklist_evidence_required",
    );
    let mut r = report("t1");
    r["checklist"][0]["evidence"] = json!("src/a.rs:0");
    let rej = d.rejected(
        r,
        &["check_write_target"],
        "failures.READY.checklist_evidence_format_invalid",
    );
    assert!(rej.message.text.contains("src/a.rs:0"));
    let mut r = report("t1");
    r["checklist"][0] = json!({"item": "t1 item", "status": "skipped", "reason": "too short"});
    d.rejected(
        r,
        &["check_write_target"],
        "failures.READY.checklist_reason_required",
    );
    let mut r = report("t1");
    r["checklist"][0] = json!({"item": "t1 item", "status": "pending"});
    d.rejected(
        r,
        &["check_write_target"],
        "failures.READY.checklist_item_pending",
    );
    let mut r = report("t1");
    r["checklist"][0] = json!({"item": "t1 item", "status": "skipped", "reason": "the existing helper already does this"});
    d.ok(r, &["check_write_target"], "READY_IMPL");
    d.rejected(
        report("t1"),
        &["check_write_target"],
        "failures.READY.already_completed",
    );
    d.ok(report("t2"), &["check_write_target"], "READY_COMPLETE");
}

#[test]
fn verification_loop_escalates_and_resumes() {
    let mut d = driver("--no-doc --fast");
    frame(&mut d, "READY_PLAN");
    for round in 1..=2 {
        for _ in 0..3 {
            implement(&mut d, &["t1"]);
            d.ok(json!({"summary": "done"}), &[], "POST_IMPL_VERIFY");
            let t = d.submit(verify(false, &["t1"]), &[]).unwrap();
            if d.state() == "VERIFY_INTERVENTION" {
                assert_eq!(t.limit_reached.as_deref(), Some("verify_failures"));
                break;
            }
            assert_eq!(d.state(), "READY_PLAN");
            assert_eq!(d.instance.vars["revert_reason"], json!("test_x fails"));
        }
        assert_eq!(d.state(), "VERIFY_INTERVENTION", "round {round}");
        let t = d.submit(json!({"prompt_used": "step_back.md", "action_taken": "rethought", "tools_used": [], "summary": "i"}), &[]).unwrap();
        if round == 1 {
            assert_eq!(t.to, "READY_PLAN");
            assert_eq!(d.instance.tasks[0].counters["failure_count"], 0);
        } else {
            // FIX(CI-B9): the second intervention escalates to the user...
            assert_eq!(t.to, "USER_ESCALATION");
            assert_eq!(
                t.message.unwrap().key,
                "failures.VERIFY_INTERVENTION.escalation_count"
            );
        }
    }
    // ...who answers, and the session resumes planning with the counters reset.
    d.rejected(
        json!({"user_answer": "", "decision": "resume", "tools_used": [], "summary": "s"}),
        &[],
        "failures.VERIFY_INTERVENTION.user_escalation",
    );
    d.ok(json!({"user_answer": "use the v2 API", "decision": "resume", "tools_used": [], "summary": "s"}), &[], "READY_PLAN");
    assert_eq!(d.instance.counters["intervention_count"], 0);
    assert_eq!(d.instance.vars["revert_reason"], json!("use the v2 API"));
}

#[test]
fn no_intervention_still_bounds_the_verify_loop() {
    // FIX(CI-B10): with -ni and an empty failed_tasks the original looped forever.
    for flags in ["-ni --no-doc", "--quick --no-doc"] {
        let mut d = driver(flags);
        frame(
            &mut d,
            if flags.contains("quick") {
                "READY_PLAN"
            } else {
                "EXPLORATION"
            },
        );
        if d.state() == "EXPLORATION" {
            explore_to_ready(&mut d);
        }
        let mut rounds = 0;
        while d.state() == "READY_PLAN" {
            rounds += 1;
            assert!(rounds <= 3, "{flags}: not bounded");
            implement(&mut d, &["t1"]);
            d.ok(json!({"summary": "done"}), &[], "POST_IMPL_VERIFY");
            d.rejected(
                verify(false, &[]),
                &[],
                "failures.POST_IMPL_VERIFY.failed_tasks_required",
            );
            d.submit(verify(false, &["other"]), &[]).unwrap();
        }
        assert_eq!(d.state(), "USER_ESCALATION", "{flags}");
        d.ok(json!({"user_answer": "stop here", "decision": "abort", "tools_used": [], "summary": "s"}), &[], "SESSION_ABORTED");
    }
}

#[test]
fn quality_reverts_force_completion_with_a_warning() {
    let mut d = driver("--no-doc");
    frame(&mut d, "EXPLORATION");
    explore_to_ready(&mut d);
    for attempt in 1..=3 {
        implement(&mut d, &[&format!("t{attempt}")]);
        d.ok(json!({"summary": "done"}), &[], "POST_IMPL_VERIFY");
        d.ok(verify(true, &[]), &[], "PRE_COMMIT");
        d.ok(pre_commit(), &["review_changes"], "QUALITY_REVIEW");
        let t = d.submit(quality(&["naming"]), &[]).unwrap();
        if attempt < 3 {
            assert_eq!(t.to, "READY_PLAN");
            assert_eq!(t.effects[0].action, "git.discard_prepared");
        } else {
            assert_eq!(t.to, "MERGE");
            assert_eq!(
                t.message.unwrap().key,
                "failures.QUALITY_REVIEW.quality_forced_completion"
            );
            // The redirect commits what was prepared instead of discarding it.
            let actions: Vec<&str> = t.effects.iter().map(|e| e.action.as_str()).collect();
            assert_eq!(actions, ["git.commit_prepared"]);
        }
    }
}

#[test]
fn fast_commits_before_merging() {
    // FIX(CI-B3): --fast skips QUALITY_REVIEW and must commit at PRE_COMMIT.
    let mut d = driver("--fast --no-doc");
    frame(&mut d, "READY_PLAN");
    implement(&mut d, &["t1"]);
    d.ok(json!({"summary": "done"}), &[], "POST_IMPL_VERIFY");
    d.ok(verify(true, &[]), &[], "PRE_COMMIT");
    let t = d.ok(pre_commit(), &["review_changes"], "MERGE");
    assert_eq!(t.effects[0].action, "git.commit");
    assert_eq!(t.effects[0].args["message"], json!("fix login"));
}

#[test]
fn only_verify_runs_verification_alone() {
    let mut d = driver("-v");
    assert_eq!(d.state(), "POST_IMPL_VERIFY");
    let t = d.ok(verify(false, &[]), &[], "VERIFY_FAILED");
    assert_eq!(
        t.message.unwrap().key,
        "failures.POST_IMPL_VERIFY.only_verify_failed"
    );
    let mut d = driver("--only-verify");
    d.ok(verify(true, &[]), &[], "SESSION_COMPLETE");
}

#[test]
fn conflicting_flags_are_refused() {
    let c = default_contract();
    let err = code_intel::contract::flags::parse(&c, "--only-verify --fast").unwrap_err();
    assert!(err.to_string().contains("cannot be combined"), "{err}");
    assert_eq!(err.key(), "flags.conflict");
    assert!(code_intel::contract::flags::parse(&c, "--gate=x").is_err());
    assert_eq!(
        code_intel::contract::flags::parse(&c, "-g=f").unwrap()["gate"],
        json!("full")
    );
    assert!(
        code_intel::contract::flags::parse(&c, "--nope")
            .unwrap_err()
            .to_string()
            .contains("unknown flag")
    );
}

#[test]
fn replanning_keeps_failure_counts() {
    let mut d = driver("--fast --no-doc");
    frame(&mut d, "READY_PLAN");
    implement(&mut d, &["t1"]);
    d.ok(json!({"summary": "done"}), &[], "POST_IMPL_VERIFY");
    d.ok(verify(false, &["t1"]), &[], "READY_PLAN");
    // The agent resends the plan without failure_count; the server keeps its own.
    d.ok(plan(&["t1"]), &[], "READY_IMPL");
    assert_eq!(d.instance.tasks[0].counters["failure_count"], 1);
}
