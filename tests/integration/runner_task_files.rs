//! AgentRunner task files as users and the original's tools wrote them, and the findings a
//! mistyped one gets: `tests/fixtures/agent-runner-tasks/*.yaml` are task files in the
//! shapes of the original's examples, its specification and its orchestrator's output,
//! each of which must load (`# expect-warning: TEXT` lines name the warnings it must get,
//! no more); the other tests check that a wrong value lists the allowed ones, a
//! mistyped key gets a "did you mean", and a model a CLI would read as an option (or
//! split) is refused with its key, at their line and column.

use std::path::Path;

use code_intel::diagnostic::{Diagnostic, Severity, render};
use code_intel::runner::task::{self, Prd, Task};
use code_intel::source::Sources;

/// Where the fixtures are, relative to the repository root.
const DIR: &str = "tests/fixtures/agent-runner-tasks";

/// What `task::load` gives: the task and its warnings, or every finding.
type Loaded = Result<(Task, Vec<Diagnostic>), Vec<Diagnostic>>;

/// Loads `text` as `task.yaml` in `/tmp` (no path is read at load time).
fn load(text: &str) -> (Sources, Loaded) {
    let mut sources = Sources::default();
    let file = sources.add("task.yaml", text);
    let loaded = task::load(&sources, file, Path::new("/tmp"));
    (sources, loaded)
}

/// The one finding of a task that must not load: `line:col message`.
fn only_error(text: &str) -> String {
    let (sources, loaded) = load(text);
    let findings = match loaded {
        Ok(_) => panic!("the task loaded:\n{text}"),
        Err(findings) => findings,
    };
    assert_eq!(findings.len(), 1, "{}", render::human(&sources, &findings));
    let d = &findings[0];
    let span = d.span.expect("a finding with a place");
    format!("{}:{} {}", span.start.line, span.start.col, d.message)
}

const HEAD: &str = "version: 1\ntask:\n  id: t\n  prd: {text: x}\nrunner:\n";

#[test]
fn every_task_file_shape_of_the_original_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR);
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect-warning: "))
            .collect();
        let (sources, loaded) = load(&text);
        let name = path.file_name().unwrap().to_string_lossy();
        let warnings = match loaded {
            Ok((_, warnings)) => warnings,
            Err(findings) => panic!(
                "{name} does not load:\n{}",
                render::human(&sources, &findings)
            ),
        };
        assert!(
            warnings.iter().all(|w| w.severity == Severity::Warning),
            "{name}"
        );
        let messages: Vec<&str> = warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(messages.len(), expected.len(), "{name}: {messages:?}");
        for want in expected {
            assert!(
                messages.iter().any(|m| m.contains(want)),
                "{name}: no warning with {want:?} in {messages:?}"
            );
        }
    }
}

#[test]
fn both_prd_forms_give_the_text_with_a_warning_at_the_path() {
    let text = "version: 1\ntask:\n  id: both\n  prd:\n    text: the text\n    path: prd.md\n";
    let (_, loaded) = load(text);
    let (task, warnings) = loaded.unwrap_or_else(|f| panic!("refused: {f:?}"));
    assert!(
        matches!(&task.prd, Prd::Text(t) if t == "the text"),
        "{:?}",
        task.prd
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!(w.severity, Severity::Warning);
    let span = w.span.unwrap();
    assert_eq!((span.start.line, span.start.col), (6, 11), "{w:?}");
    assert_eq!(
        w.message,
        "`task.prd` has both `text` and `path`; the text is used and the path \"prd.md\" is ignored"
    );
}

#[test]
fn a_planner_kind_not_in_the_list_names_the_kinds_and_the_near_one() {
    let text = format!("{HEAD}  meta:\n    kind: mok\n");
    assert_eq!(
        only_error(&text),
        "7:11 `runner.meta.kind`: `mok` is not one of `openai-chat`, `codex-cli`, `claude-code`, `mock`; did you mean `mock`?"
    );
}

#[test]
fn a_worker_kind_not_in_the_list_names_the_kinds() {
    let text = format!("{HEAD}  worker:\n    kind: mok\n");
    assert_eq!(
        only_error(&text),
        "7:11 `runner.worker.kind`: `mok` is not one of `codex-cli`, `claude-code`, `gemini-cli`, `cursor-cli`, `command`"
    );
    // The original took `codex` or `claude` for a planner kind (a substring match).
    let text = format!("{HEAD}  meta:\n    kind: codex\n");
    assert!(
        only_error(&text).ends_with("; did you mean `codex-cli`?"),
        "{}",
        only_error(&text)
    );
    let text = format!("{HEAD}  worker:\n    kind: claude-cod\n");
    assert!(
        only_error(&text).ends_with("; did you mean `claude-code`?"),
        "{}",
        only_error(&text)
    );
}

#[test]
fn a_mistyped_key_gets_a_did_you_mean() {
    let text = format!("{HEAD}  max_loop: 3\n");
    assert_eq!(
        only_error(&text),
        "6:3 unknown key `max_loop` in `runner`; did you mean `max_loops`?"
    );
    let text = format!("{HEAD}  worker:\n    docker_imag: x\n");
    assert_eq!(
        only_error(&text),
        "7:5 unknown key `docker_imag` in `runner.worker`; did you mean `docker_image`?"
    );
    // A shortened key: the one allowed key that contains it.
    let text = format!("{HEAD}  worker:\n    max_run_time: 60\n");
    assert_eq!(
        only_error(&text),
        "7:5 unknown key `max_run_time` in `runner.worker`; did you mean `max_run_time_sec`?"
    );
    // Nothing near: no guess.
    let text = format!("{HEAD}  parallelism: 3\n");
    assert_eq!(
        only_error(&text),
        "6:3 unknown key `parallelism` in `runner`"
    );
}

/// A model reaches a CLI's command line (`--model VALUE`); one that starts with `-` would
/// be read as an option there (`--dangerously-skip-permissions`), and whitespace or a
/// control character would split or garble it: each is refused at its place, with its key.
#[test]
fn a_model_a_cli_would_read_as_an_option_is_refused_at_its_place() {
    let text = format!(
        "{HEAD}  meta:\n    kind: claude-code\n    model: \"--dangerously-skip-permissions\"\n"
    );
    assert_eq!(
        only_error(&text),
        "8:12 `runner.meta.model`: the model \"--dangerously-skip-permissions\" starts with `-`, which a CLI would read as an option, not a model (model.leading_dash)"
    );
    let text = format!("{HEAD}  worker:\n    kind: claude-code\n    model: -p\n");
    assert_eq!(
        only_error(&text),
        "8:12 `runner.worker.model`: the model \"-p\" starts with `-`, which a CLI would read as an option, not a model (model.leading_dash)"
    );
    let text = format!("{HEAD}  worker:\n    model: \"gpt-5 --yolo\"\n");
    assert_eq!(
        only_error(&text),
        "7:12 `runner.worker.model`: the model \"gpt-5 --yolo\" holds whitespace or a control character, which no model name has (model.whitespace_or_control)"
    );
    let text = format!("{HEAD}  meta:\n    model: \"gpt-5\\n--yolo\"\n");
    assert!(
        only_error(&text)
            .starts_with("7:12 `runner.meta.model`: the model \"gpt-5\\n--yolo\" holds whitespace"),
        "{}",
        only_error(&text)
    );
    // A tooling candidate's model goes to the same command lines.
    let text = format!(
        "{HEAD}  tooling:\n    profiles:\n      p:\n        meta:\n          candidates: [{{tool: codex-cli, model: --full-auto}}]\n        worker:\n          candidates: [{{tool: codex-cli, model: -x}}]\n"
    );
    let (sources, loaded) = load(&text);
    let findings = loaded.expect_err("the task loaded");
    let shown: Vec<String> = findings
        .iter()
        .map(|d| {
            let at = d.span.expect("a place").start;
            format!("{}:{} {}", at.line, at.col, d.message)
        })
        .collect();
    assert_eq!(shown.len(), 2, "{}", render::human(&sources, &findings));
    assert!(
        shown[0].starts_with("10:49 `model`: the model \"--full-auto\" starts with `-`"),
        "{shown:?}"
    );
    assert!(
        shown[1].starts_with("12:49 `model`: the model \"-x\" starts with `-`"),
        "{shown:?}"
    );
    // Names as providers spell them load.
    for model in [
        "gpt-5.2",
        "claude-sonnet-4-5@20250929",
        "openrouter/meta/llama-3:70b",
    ] {
        let text = format!("{HEAD}  meta:\n    model: {model}\n  worker:\n    model: {model}\n");
        assert!(load(&text).1.is_ok(), "{model}");
    }
}
