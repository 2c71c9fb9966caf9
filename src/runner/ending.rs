//! Why a task that did not complete ended, as one sentence a person can act on: the
//! planner's judgement (its reason to give up, its question, its verdict on the work), the
//! test command's failure, the worker's exit, or what could not be done (the PRD, the
//! sandbox, a planner that failed). The host records the latest such cause as the flow
//! goes; the result's and the note's `summary` is built from it, never from the task
//! contract's transition messages, whose text is the flow's own (`RUNNING -> FAILED: The
//! planner aborted the task.` says nothing of why) and which Multiverse would show as a
//! failed task's reason.

use super::protocol::response::{CompletionAssessmentPayload, Decision};
use super::protocol::{Action, Status as Verdict};
use super::provider::prompt::excerpt;
use super::report::Status;
use super::worker_turn::{RunEnding, TestResult, WorkerRun};

/// The most characters of quoted output (a worker's last line, a test's) in a cause.
const QUOTE_CHARS: usize = 300;
/// The most characters of a planner's own words (a reason, a verdict) in a cause.
const PLANNER_CHARS: usize = 1000;

/// The summary of a task that ended with `status` in `state` after `runs` worker runs,
/// given the last `cause` recorded (`None` when nothing went wrong that the host saw).
pub(crate) fn summary(status: Status, state: &str, cause: Option<&str>, runs: usize) -> String {
    match (status, cause) {
        (Status::Cancelled, _) => "The task was cancelled.".to_string(),
        // Out of worker runs: the last thing that kept it from completing.
        (Status::Incomplete, Some(cause)) => {
            let plural = if runs == 1 { "" } else { "s" };
            format!("After {runs} worker run{plural} (runner.max_loops): {cause}")
        }
        (_, Some(cause)) => cause.to_string(),
        (_, None) => format!("The task ended {} in {state}.", status.as_str()),
    }
}

/// What a worker run that did not succeed did, or `None` when it exited 0.
pub(crate) fn worker_run(run: &WorkerRun) -> Option<String> {
    let what = match (&run.error, run.ending, run.exit_code) {
        (Some(error), _, _) => format!("the worker could not run: {error}"),
        (None, RunEnding::Exited, Some(0)) => return None,
        (None, RunEnding::TimedOut, _) => format!(
            "the worker ran out of time after {} s",
            run.duration_ms / 1000
        ),
        (None, RunEnding::Cancelled, _) => "the worker was stopped".to_string(),
        (None, _, Some(code)) => format!("the worker exited with code {code}"),
        (None, _, None) => "the worker did not run".to_string(),
    };
    // A failing CLI says why on stderr; its final message (or last output) otherwise.
    let said = last_line(&run.stderr_tail).or_else(|| last_line(&run.summary));
    Some(match said {
        Some(line) => format!("{}: {what}: {line}", run.id),
        None => format!("{}: {what}", run.id),
    })
}

/// What a test run that did not pass said, or `None` when it passed.
pub(crate) fn test_run(result: &TestResult) -> Option<String> {
    if result.passed() {
        return None;
    }
    let what = match (&result.error, result.ending, result.exit_code) {
        (Some(error), _, _) => return Some(action_error("tests.run", error)),
        (None, RunEnding::TimedOut, _) => "The tests ran out of time".to_string(),
        (None, _, Some(code)) => format!("The tests failed (exit code {code})"),
        (None, _, None) => "The tests did not finish".to_string(),
    };
    Some(match last_line(&result.output_tail) {
        Some(line) => format!("{what}: {line}"),
        None => what,
    })
}

/// The planner's verdict on work it did not accept, or `None` when it did.
pub(crate) fn verdict(payload: &CompletionAssessmentPayload) -> Option<String> {
    if payload.all_criteria_satisfied {
        return None;
    }
    let summary = payload.summary.trim();
    if !summary.is_empty() {
        return Some(format!(
            "The planner found the work unfinished: {}",
            excerpt(summary, PLANNER_CHARS)
        ));
    }
    let unmet: Vec<String> = payload
        .by_criterion
        .iter()
        .filter(|v| v.status != Verdict::Passed)
        .map(|v| match v.comment.trim() {
            "" => v.id.clone(),
            comment => format!("{} ({})", v.id, excerpt(comment, QUOTE_CHARS)),
        })
        .collect();
    Some(format!(
        "The planner found criteria unmet: {}",
        unmet.join("; ")
    ))
}

/// The planner's reason for a decision that ends the task (giving up, a question), or
/// `None` for one that goes on working.
pub(crate) fn decision(decision: &Decision) -> Option<String> {
    match decision.action {
        Action::Abort => Some(match decision.reason.trim() {
            "" => "The planner gave up on the task without a reason.".to_string(),
            reason => format!("The planner gave up: {}", excerpt(reason, PLANNER_CHARS)),
        }),
        Action::AskHuman => decision
            .question()
            .map(|q| format!("The planner asks: {}", excerpt(&q, PLANNER_CHARS))),
        Action::RunWorker | Action::MarkComplete => None,
    }
}

/// An action that could not do its part (`{ok: false, error}`), said with what it was.
pub(crate) fn action_error(action: &str, error: &str) -> String {
    let what = match action {
        "prd.load" => "The PRD could not be read",
        "preflight.check" => "The worker cannot run here",
        "sandbox.start" => "The sandbox could not be started",
        "meta.plan_task" => "The planner could not plan the task",
        "meta.next_action" => "The planner could not decide what to do next",
        "tests.run" => "The test command could not run",
        "meta.completion_assessment" => "The planner could not assess the work",
        other => return format!("{other} failed: {}", excerpt(error, PLANNER_CHARS)),
    };
    let error = excerpt(error, PLANNER_CHARS);
    // An error that already says what could not be done ("the test command could not
    // run in the image ...") is the sentence itself.
    let subject: Vec<&str> = what.split(' ').take(3).collect();
    if error
        .to_lowercase()
        .starts_with(&subject.join(" ").to_lowercase())
    {
        return capitalised(&error);
    }
    format!("{what}: {error}")
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The last line of `text` with something on it, bounded.
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| excerpt(l, QUOTE_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::protocol::response::CriterionVerdict;

    fn run(exit_code: Option<i32>, ending: RunEnding, stderr: &str, summary: &str) -> WorkerRun {
        WorkerRun {
            id: "run-2".into(),
            started_at: String::new(),
            finished_at: String::new(),
            duration_ms: 61_000,
            exit_code,
            ending,
            stdout_tail: String::new(),
            stderr_tail: stderr.into(),
            summary: summary.into(),
            files_changed: vec![],
            diff_stat: String::new(),
            error: None,
            refused: vec![],
            candidate: None,
        }
    }

    fn test(exit_code: Option<i32>, output: &str, error: Option<&str>) -> TestResult {
        TestResult {
            command: "cargo test".into(),
            cwd: "/w".into(),
            exit_code,
            ending: if error.is_some() {
                RunEnding::NotStarted
            } else {
                RunEnding::Exited
            },
            output_tail: output.into(),
            duration_ms: 5,
            error: error.map(str::to_string),
        }
    }

    #[test]
    fn a_worker_run_is_its_exit_and_what_it_said_last() {
        assert_eq!(
            worker_run(&run(Some(0), RunEnding::Exited, "", "done")),
            None
        );
        assert_eq!(
            worker_run(&run(
                Some(2),
                RunEnding::Exited,
                "building\ncannot build\n\n",
                "x"
            )),
            Some("run-2: the worker exited with code 2: cannot build".into())
        );
        assert_eq!(
            worker_run(&run(
                Some(1),
                RunEnding::Exited,
                "",
                "I could not find the file."
            )),
            Some("run-2: the worker exited with code 1: I could not find the file.".into())
        );
        assert_eq!(
            worker_run(&run(Some(124), RunEnding::TimedOut, "", "")),
            Some("run-2: the worker ran out of time after 61 s".into())
        );
        let mut broken = run(None, RunEnding::NotStarted, "", "");
        broken.error = Some("docker exec failed".into());
        assert_eq!(
            worker_run(&broken),
            Some("run-2: the worker could not run: docker exec failed".into())
        );
    }

    #[test]
    fn a_test_run_is_its_exit_and_its_last_line() {
        assert_eq!(test_run(&test(Some(0), "ok", None)), None);
        assert_eq!(
            test_run(&test(
                Some(101),
                "running 3 tests\ntest result: FAILED. 2 passed; 1 failed\n",
                None
            )),
            Some(
                "The tests failed (exit code 101): test result: FAILED. 2 passed; 1 failed".into()
            )
        );
        assert_eq!(
            test_run(&test(None, "", Some("sh: not found"))),
            Some("The test command could not run: sh: not found".into())
        );
        let long = "x".repeat(1000);
        let said = test_run(&test(Some(1), &long, None)).unwrap();
        assert!(said.len() < 400 && said.ends_with("[...]"), "{said}");
    }

    #[test]
    fn the_planners_words_are_the_cause_when_it_judges() {
        let verdicts = |summary: &str| CompletionAssessmentPayload {
            all_criteria_satisfied: false,
            summary: summary.into(),
            by_criterion: vec![
                CriterionVerdict {
                    id: "AC-1".into(),
                    status: Verdict::Passed,
                    comment: String::new(),
                },
                CriterionVerdict {
                    id: "AC-2".into(),
                    status: Verdict::Failed,
                    comment: "hello.txt is empty".into(),
                },
            ],
        };
        assert_eq!(
            verdict(&verdicts("hello.txt exists but is empty")),
            Some("The planner found the work unfinished: hello.txt exists but is empty".into())
        );
        assert_eq!(
            verdict(&verdicts(" ")),
            Some("The planner found criteria unmet: AC-2 (hello.txt is empty)".into())
        );
        let abort = Decision {
            action: Action::Abort,
            reason: "the tests cannot pass on this platform".into(),
            question: None,
        };
        assert_eq!(
            decision(&abort),
            Some("The planner gave up: the tests cannot pass on this platform".into())
        );
        let ask = Decision {
            action: Action::AskHuman,
            reason: "unsure".into(),
            question: Some("Which database?".into()),
        };
        assert_eq!(
            decision(&ask),
            Some("The planner asks: Which database?".into())
        );
        let work = Decision {
            action: Action::RunWorker,
            reason: "go".into(),
            question: None,
        };
        assert_eq!(decision(&work), None);
    }

    #[test]
    fn the_summary_is_the_cause_with_no_state_or_transition_in_it() {
        let cause = "The tests failed (exit code 1): FAIL";
        assert_eq!(summary(Status::Failed, "FAILED", Some(cause), 1), cause);
        assert_eq!(
            summary(Status::Incomplete, "INCOMPLETE", Some(cause), 3),
            "After 3 worker runs (runner.max_loops): The tests failed (exit code 1): FAIL"
        );
        assert_eq!(
            summary(Status::Cancelled, "CANCELLED", Some(cause), 1),
            "The task was cancelled."
        );
        assert_eq!(
            summary(Status::Failed, "FAILED", None, 0),
            "The task ended failed in FAILED."
        );
        assert_eq!(
            action_error("sandbox.start", "no docker"),
            "The sandbox could not be started: no docker"
        );
        assert_eq!(
            action_error(
                "tests.run",
                "the test command could not run in the image i (exit 127: not found): sh: cargo: not found"
            ),
            "The test command could not run in the image i (exit 127: not found): sh: cargo: not found"
        );
    }
}
