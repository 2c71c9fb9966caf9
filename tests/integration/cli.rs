//! The command line as users run it: `lint`, `graph`, `matrix`, `schema`, and the
//! project overlay of the built-in contract.

use std::path::Path;
use std::process::Output;

use crate::support::{TempDir, default_contract, repo};

fn run(dir: &Path, args: &[&str]) -> Output {
    crate::support::code_intel()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn temp_dir(name: &str) -> TempDir {
    TempDir::create(&format!("code-intel-cli-{name}-{}", std::process::id()))
}

#[test]
fn shipped_contracts_lint_clean() {
    let o = run(&repo(), &["lint", "contracts/"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(stdout(&o), "");
}

/// Validates mermaid text with mermaid's own parser (tests/mermaid, installed with `npm ci`
/// by `.ci/run`, or here when missing).
fn assert_valid_mermaid(files: &[&Path]) {
    let checker = repo().join("tests/mermaid");
    if let Err(e) = crate::support::npm_package("mermaid", "mermaid") {
        panic!("mermaid's parser is needed for this check: {e}");
    }
    let o = crate::sealed::command("node")
        .arg(checker.join("validate.mjs"))
        .args(files)
        .output()
        .expect("node is needed for the mermaid check");
    assert!(
        o.status.success(),
        "invalid mermaid:\n{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn graph_shows_every_phase_in_valid_mermaid() {
    let contract = default_contract();
    let dir = temp_dir("graph");
    let o = run(&repo(), &["graph", "--format", "mermaid"]);
    assert!(o.status.success());
    let text = stdout(&o);
    for state in &contract.states {
        assert!(
            text.contains(&format!("s_{}[", state.id))
                || text.contains(&format!("s_{}(", state.id)),
            "{} missing",
            state.id
        );
    }
    let mut files = vec![dir.join("full.mmd")];
    std::fs::write(&files[0], &text).unwrap();
    for column in &contract.matrix_columns {
        let o = run(&repo(), &["graph", "--flags", &column.flags]);
        assert!(o.status.success(), "{}", column.key);
        let file = dir.join(format!("{}.mmd", column.key));
        std::fs::write(&file, stdout(&o)).unwrap();
        files.push(file);
    }
    let agent = run(
        &repo(),
        &["graph", "--contract", "contracts/agent_runner_task.yml"],
    );
    let file = dir.join("agent.mmd");
    std::fs::write(&file, stdout(&agent)).unwrap();
    files.push(file);
    let refs: Vec<&Path> = files.iter().map(std::path::PathBuf::as_path).collect();
    assert_valid_mermaid(&refs);
}

#[test]
fn graph_under_flags_leaves_out_skipped_phases() {
    let quick = stdout(&run(&repo(), &["graph", "--flags", "--quick"]));
    assert!(!quick.contains("s_EXPLORATION"));
    assert!(!quick.contains("s_QUALITY_REVIEW"));
    assert!(quick.contains("s_POST_IMPL_VERIFY"));
    let dot = stdout(&run(&repo(), &["graph", "--format", "dot"]));
    assert!(
        dot.starts_with("digraph") && dot.contains("\"QUALITY_REVIEW\" -> \"READY_PLAN\""),
        "{dot}"
    );
    let bad = run(&repo(), &["graph", "--flags", "--only-verify --fast"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("cannot be combined"));
}

#[test]
fn matrix_json_matches_the_library() {
    let o = run(&repo(), &["matrix", "--format", "json"]);
    assert!(o.status.success());
    let printed: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let computed =
        serde_json::to_value(code_intel::analysis::compute(&default_contract()).unwrap()).unwrap();
    assert_eq!(printed, computed);
    let markdown = stdout(&run(&repo(), &["matrix"]));
    assert!(
        markdown
            .contains("| 16 | VERIFY_INTERVENTION | ✅ | ❌ | ❌ | ❌ | ✅ | ✅ | ❌ | ✅ | ❌ |"),
        "{markdown}"
    );
}

#[test]
fn schema_command_prints_the_checked_in_schema() {
    let o = run(&repo(), &["schema"]);
    assert_eq!(
        stdout(&o),
        std::fs::read_to_string(repo().join("schemas/contract.schema.json")).unwrap()
    );
}

#[test]
fn a_project_overlay_changes_one_message_and_keeps_the_rest() {
    let dir = temp_dir("overlay");
    std::fs::create_dir_all(dir.join(".code-intel")).unwrap();
    let overlay = "extends: builtin\nmessages:\n  common_failures.summary_required:\n    error: payload_mismatch\n    en: \"Write a summary for {phase}, please.\"\n    ja: \"{phase} の summary を書いてください。\"\n";
    std::fs::write(dir.join(".code-intel/phase_contract.yml"), overlay).unwrap();
    let lint = run(&dir, &["lint"]);
    assert_eq!(lint.status.code(), Some(0), "{}", stdout(&lint));
    let matrix = run(&dir, &["matrix", "--format", "json"]);
    assert!(matrix.status.success());
    // A broken overlay is reported against the overlay file, with its position.
    let broken = "extends: builtin\nstates:\n  EXPLORATION:\n    otherwise: {to: NOWHERE}\n";
    std::fs::write(dir.join(".code-intel/phase_contract.yml"), broken).unwrap();
    let lint = run(&dir, &["lint"]);
    assert_eq!(lint.status.code(), Some(1));
    let out = stdout(&lint);
    assert!(
        out.contains("error[unknown-transition-target]")
            && out.contains(".code-intel/phase_contract.yml:4:21"),
        "{out}"
    );
    let graph = run(&dir, &["graph"]);
    assert_eq!(
        graph.status.code(),
        Some(1),
        "an invalid contract is not drawn"
    );
}

#[test]
fn lint_formats_and_exit_codes() {
    let o = run(
        &repo(),
        &["lint", "contracts/phase_contract.yml", "--format", "sarif"],
    );
    assert_eq!(o.status.code(), Some(0));
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));
    // Columns count characters (code points), and SARIF's default is UTF-16 code units.
    assert_eq!(sarif["runs"][0]["columnKind"], "unicodeCodePoints");
    let missing = run(&repo(), &["lint", "does/not/exist.yml"]);
    assert_eq!(missing.status.code(), Some(2));
    let usage = run(&repo(), &["lint", "--format", "xml"]);
    assert_eq!(usage.status.code(), Some(2));
}

/// A directory of contracts in which some files cannot be read: each one is a
/// `file-unreadable` finding at its path, and every other file is still linted.
fn partly_unreadable_dir(name: &str) -> TempDir {
    let dir = temp_dir(name);
    std::fs::copy(
        repo().join("contracts/agent_runner_task.yml"),
        dir.join("a_good.yml"),
    )
    .unwrap();
    std::fs::write(dir.join("b_broken.yml"), "states: [\n").unwrap();
    // Latin-1, not UTF-8: the byte 0xE9 is at line 2, column 10.
    std::fs::write(dir.join("c_latin1.yml"), b"# caf\xe9?\nname: caf\xe9\n").unwrap();
    std::os::unix::fs::symlink("nowhere.yml", dir.join("d_dangling.yml")).unwrap();
    // A loop of symlinks between directories is walked once.
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink("..", dir.join("sub/up")).unwrap();
    dir
}

#[test]
fn one_unreadable_file_does_not_sink_the_run() {
    let dir = partly_unreadable_dir("unreadable");
    let o = run(&dir, &["lint", ".", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<(String, String, u64, u64)> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["file"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = |code: &str, file: &str, line: u64, col: u64| {
        (code.to_string(), file.to_string(), line, col)
    };
    assert_eq!(
        found,
        [
            want("yaml-syntax", "./b_broken.yml", 2, 1),
            want("file-unreadable", "./c_latin1.yml", 1, 6),
            want("file-unreadable", "./d_dangling.yml", 1, 1),
        ],
        "{doc}"
    );
    assert!(
        stderr.contains("checked 4 contract files: 3 errors, 0 warnings (2 could not be read)"),
        "{stderr}"
    );
    // Every format says the same, validly, and a named file that is missing is one more
    // finding rather than the end of the run.
    for format in ["human", "sarif", "github"] {
        let o = run(&dir, &["lint", ".", "missing.yml", "--format", format]);
        assert_eq!(o.status.code(), Some(2), "{format}");
        let text = stdout(&o);
        for file in [
            "b_broken.yml",
            "c_latin1.yml",
            "d_dangling.yml",
            "missing.yml",
        ] {
            assert!(text.contains(file), "{format}: {file} missing from\n{text}");
        }
        match format {
            "sarif" => {
                let sarif: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 4);
            }
            "github" => assert!(
                text.lines().all(|l| l.starts_with("::error ")) && text.lines().count() == 4,
                "{text}"
            ),
            _ => assert!(text.contains("error[file-unreadable]: "), "{text}"),
        }
    }
    // The human form shows the line with the bad byte and points at it.
    let o = run(&dir, &["lint", "c_latin1.yml"]);
    let text = stdout(&o);
    assert!(
        text.contains("--> c_latin1.yml:1:6") && text.contains("1 | # caf\u{fffd}?"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run that finds no contract file says so and fails (a CI pointed at the wrong
/// directory notices), and still prints a valid empty document in every format.
#[test]
fn a_directory_with_no_contract_is_an_error_with_valid_output() {
    let dir = temp_dir("no-contract");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::write(dir.join("empty/notes.txt"), "hello\n").unwrap();
    for format in ["human", "json", "sarif", "github"] {
        let o = run(&dir, &["lint", "empty", "--format", format]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{format}: {stderr}");
        assert!(
            stderr.contains("no contract file (*.yml, *.yaml) in empty"),
            "{format}: {stderr}"
        );
        let text = stdout(&o);
        match format {
            "json" => {
                let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(doc["diagnostics"], serde_json::json!([]));
            }
            "sarif" => {
                let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(doc["version"], "2.1.0");
                assert_eq!(doc["runs"][0]["results"], serde_json::json!([]));
            }
            _ => assert_eq!(text, "", "{format}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lint` ends with a one-line summary on stderr, clean or not.
#[test]
fn lint_prints_a_summary_on_stderr() {
    let o = run(&repo(), &["lint", "contracts/"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "checked 4 contract files: 0 errors, 0 warnings\n"
    );
    let o = run(
        &repo(),
        &[
            "lint",
            "tests/fixtures/lint/unused-message.yml",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "checked 1 contract file: 0 errors, 1 warning\n"
    );
    let dir = temp_dir("summary-builtin");
    let o = run(&dir, &["lint"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "checked the built-in contract: 0 errors, 0 warnings\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--intent` draws the flow for that intent, with or without `--flags`; an intent the
/// contract does not declare is a usage error that lists the ones it does.
#[test]
fn graph_intent_is_checked_and_applies_without_flags() {
    let bad = run(&repo(), &["graph", "--intent", "NOPE"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(stdout(&bad), "");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("unknown intent `NOPE`; the contract's intents are: IMPLEMENT, MODIFY, INVESTIGATE, QUESTION"),
        "{stderr}"
    );
    let whole = stdout(&run(&repo(), &["graph"]));
    let question = run(&repo(), &["graph", "--intent", "QUESTION"]);
    assert_eq!(question.status.code(), Some(0));
    let question = stdout(&question);
    assert_ne!(question, whole, "--intent without --flags is not ignored");
    assert_eq!(
        question,
        stdout(&run(
            &repo(),
            &["graph", "--intent", "QUESTION", "--flags", ""]
        ))
    );
    let with_flags = stdout(&run(
        &repo(),
        &["graph", "--intent", "IMPLEMENT", "--flags", "--fast"],
    ));
    assert_eq!(
        with_flags,
        stdout(&run(&repo(), &["graph", "--flags", "--fast"])),
        "IMPLEMENT is the default intent"
    );
}

/// Every command whose reader goes away ends quietly: no panic ("failed printing to
/// stdout"), no exit status 101. Each command runs three ways: its stdout closed before it
/// writes; its stdout read for one byte and then closed (`| head -c 1`), so a later write
/// fails; and stdout and stderr sharing that pipe (`2>&1 | head -c 1`), so its messages
/// on stderr meet the closed pipe too.
#[test]
fn no_command_panics_on_a_closed_stdout() {
    let dir = temp_dir("closed-pipe");
    std::fs::write(
        dir.join("app.py"),
        "def parse_config(path):\n    return path\n\n\nparse_config(1)\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("flows")).unwrap();
    std::fs::write(dir.join("flows/bad.yml"), b"name: caf\xe9\n").unwrap();
    std::fs::write(dir.join("flows/broken.yml"), "states: [\n").unwrap();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let contracts = repo().join("contracts");
    let contracts = contracts.to_str().unwrap();
    let agent = repo().join("contracts/agent_runner_task.yml");
    let agent = agent.to_str().unwrap();
    let mut commands: Vec<Vec<&str>> = Vec::new();
    for format in ["human", "json", "sarif", "github"] {
        commands.push(vec!["lint", contracts, "flows", "--format", format]);
        commands.push(vec!["lint", "empty", "--format", format]);
        commands.push(vec!["lint", "--format", format]);
    }
    let rest: &[&[&str]] = &[
        &["lint", "no/such/file.yml"],
        &["lint", "--help"],
        &["matrix"],
        &["matrix", "--format", "json"],
        &["matrix", "--contract", agent],
        &["graph"],
        &["graph", "--format", "dot", "--flags", "--fast"],
        &["graph", "--intent", "QUESTION"],
        &["graph", "--intent", "NOPE"],
        &["graph", "--contract", "flows/broken.yml"],
        &["schema"],
        &["search", "parse"],
        &["search", "parse", "--json"],
        &["files", "*.py"],
        &["index"],
        &["defs", "parse_config"],
        &["defs", "parse_config", "--json"],
        &["refs", "parse_config"],
        &["refs", "parse_config", "--json"],
        &["refs", "NoSuchThing"],
        &["symbols", "app.py"],
        &["symbols", "app.py", "--line", "2"],
        &["structure"],
        &["impact", "app.py"],
        &["impact", "parse_config", "--json"],
        &["query", "where is parse_config defined"],
        &["init", "--help"],
        &["hook", "claude"],
        &["serve", "--help"],
        &["--help"],
        &["--version"],
        &["no-such-command"],
    ];
    commands.extend(rest.iter().map(|c| c.to_vec()));
    let mut failures = Vec::new();
    for args in &commands {
        for mode in ["closed", "head -c 1", "2>&1 | head -c 1"] {
            let (status, stderr) = run_into_closing_pipe(&dir, args, mode);
            if status.code() == Some(101) || status.code().is_none() || stderr.contains("panicked")
            {
                failures.push(format!("{args:?} ({mode}): {status:?}\n{stderr}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the binary with stdin empty and its stdout going to a reader that goes away:
/// `closed` before the command writes, or (`head -c 1`) after reading one byte; in the
/// `2>&1` mode stderr goes to that pipe as well. Returns the exit status and what the
/// command wrote to stderr when stderr is its own pipe.
fn run_into_closing_pipe(
    dir: &Path,
    args: &[&str],
    mode: &str,
) -> (std::process::ExitStatus, String) {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut command = crate::support::code_intel();
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    if mode == "2>&1 | head -c 1" {
        let (mut reader, writer) = std::io::pipe().unwrap();
        command.stdout(writer.try_clone().unwrap()).stderr(writer);
        let mut child = command.spawn().unwrap();
        // Only the child holds the write end now, so the read ends when it exits.
        drop(command);
        let mut byte = [0u8; 1];
        let _ = reader.read(&mut byte);
        drop(reader);
        return (child.wait().unwrap(), String::new());
    }
    command.stdout(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    if mode == "head -c 1" {
        let mut byte = [0u8; 1];
        let _ = stdout.read(&mut byte);
    }
    drop(stdout);
    let status = child.wait().unwrap();
    (status, errors.join().unwrap())
}

/// `impact` and `refs` of something that does not exist, or lies outside the root, are
/// errors (exit 2, saying which), not an empty answer with "risk: low".
#[test]
fn impact_and_refs_of_what_does_not_exist_are_errors() {
    let dir = temp_dir("not-found");
    std::fs::write(
        dir.join("app.py"),
        "def parse_config(path):\n    return path\n\n\nparse_config(1)\n",
    )
    .unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["impact", "NoSuchThing"], "was not found"),
        (&["impact", "nope/missing.py"], "does not exist"),
        (&["impact", "../x"], "outside the repository root"),
        (&["impact", "/etc/passwd"], "outside the repository root"),
        (&["refs", "NoSuchThing"], "was not found"),
    ];
    for (args, message) in cases {
        let o = run(&dir, args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stdout(&o).contains("risk"), "{args:?}: {}", stdout(&o));
    }
    for args in [
        &["impact", "parse_config"][..],
        &["refs", "parse_config"],
        &["impact", "app.py"],
    ] {
        assert_eq!(run(&dir, args).status.code(), Some(0), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A section that shows fewer items than it has says how many, and how to see the rest:
/// `--section` after the default summary, `--offset` when paging.
#[test]
fn truncated_impact_sections_say_what_they_show() {
    let dir = temp_dir("truncated");
    std::fs::write(
        dir.join("app.py"),
        "def parse_config(path):\n    return path\n",
    )
    .unwrap();
    for i in 0..5 {
        std::fs::write(
            dir.join(format!("c{i}.py")),
            format!("def f{i}():\n    return parse_config({i})\n"),
        )
        .unwrap();
    }
    for i in 5..8 {
        std::fs::write(
            dir.join(format!("c{i}.py")),
            format!("def f{i}():\n    return parse_config({i})\n"),
        )
        .unwrap();
    }
    assert_eq!(run(&dir, &["index"]).status.code(), Some(0));
    // By default each section shows its count and its first items.
    let text = stdout(&run(&dir, &["impact", "parse_config"]));
    assert!(
        text.contains("showing 5 of 8 callers (--section callers for all)"),
        "{text}"
    );
    let o = run(&dir, &["impact", "parse_config", "--all", "--limit", "2"]);
    let text = stdout(&o);
    assert!(
        text.contains("showing 2 of 8 callers (--offset 2 or --limit 0 for more)"),
        "{text}"
    );
    let o = run(
        &dir,
        &[
            "impact",
            "parse_config",
            "--section",
            "callers",
            "--offset",
            "6",
        ],
    );
    let text = stdout(&o);
    assert_eq!(text.matches("caller   ").count(), 2, "{text}");
    let o = run(&dir, &["impact", "parse_config", "--all", "--limit", "0"]);
    assert!(!stdout(&o).contains("showing"), "{}", stdout(&o));
    let o = run(&dir, &["impact", "parse_config", "--section", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown section `nope`"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that is not indexed says why: too large, a directory, or not a source file.
#[test]
fn symbols_of_a_file_not_indexed_say_why() {
    let dir = temp_dir("why-not");
    std::fs::write(dir.join("big.py"), "x = 1\n".repeat(400_000)).unwrap();
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("pkg/a.py"), "def a():\n    pass\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    for (file, message) in [
        ("big.py", "over the 2097152-byte limit"),
        ("pkg", "is a directory"),
        ("notes.txt", "is not an indexed source file"),
    ] {
        let o = run(&dir, &["symbols", file]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains(message), "{file}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no index yet, `defs` and `refs` answer from the files that mention the name,
/// tagged on the spot: the same answer as after `index`, without building one first.
#[test]
fn names_are_answered_before_an_index_exists() {
    let dir = temp_dir("no-index");
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("pkg/forms.py"), "class UserForm:\n    pass\n").unwrap();
    std::fs::write(
        dir.join("views.py"),
        "from pkg.forms import UserForm\n\n\ndef view():\n    return UserForm()\n",
    )
    .unwrap();
    for i in 0..30 {
        std::fs::write(
            dir.join(format!("other{i}.py")),
            format!("def f{i}():\n    pass\n"),
        )
        .unwrap();
    }
    let before: Vec<String> = ["defs", "refs"]
        .iter()
        .map(|cmd| stdout(&run(&dir, &[cmd, "UserForm"])))
        .collect();
    assert!(
        !dir.join(".code-intel/symbols.idx").exists(),
        "answering a name does not build the whole index"
    );
    assert!(
        before[0].contains("pkg/forms.py:1:7: class UserForm"),
        "{}",
        before[0]
    );
    assert!(
        before[1].contains("views.py:5:12: call UserForm"),
        "{}",
        before[1]
    );
    assert_eq!(run(&dir, &["index"]).status.code(), Some(0));
    let after: Vec<String> = ["defs", "refs"]
        .iter()
        .map(|cmd| stdout(&run(&dir, &[cmd, "UserForm"])))
        .collect();
    assert_eq!(before, after);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Python project where a class is subclassed, imported, assigned, annotated, called
/// and decorated, and where another `items` is only reached through values.
fn uses_fixture(name: &str) -> TempDir {
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(
        dir.join("pkg/forms.py"),
        "class BaseForm:\n    def items(self):\n        return self.fields.items()\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pkg/admin.py"),
        "from pkg.forms import BaseForm\nfrom pkg import forms\n\n\n\
         class UserForm(BaseForm):\n    pass\n\n\n\
         class GroupForm(forms.BaseForm):\n    form_class = BaseForm\n\n    \
         def build(self, d) -> BaseForm:\n        d.items()\n        return BaseForm()\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("README.md"),
        "BaseForm is the base of every form.\n",
    )
    .unwrap();
    dir
}

#[test]
fn references_carry_their_kind_and_name_matches_come_last() {
    let dir = uses_fixture("refs-kinds");
    let o = run(&dir, &["refs", "BaseForm"]);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "pkg/admin.py:1:23: import BaseForm: from pkg.forms import BaseForm",
            "pkg/admin.py:5:16: inherit BaseForm (in UserForm): class UserForm(BaseForm):",
            "pkg/admin.py:9:23: inherit BaseForm (in GroupForm): class GroupForm(forms.BaseForm):",
            "pkg/admin.py:10:18: read BaseForm (in form_class): form_class = BaseForm",
            "pkg/admin.py:12:27: type BaseForm (in build): def build(self, d) -> BaseForm:",
            "pkg/admin.py:14:16: call BaseForm (in build): return BaseForm()",
        ],
        "{text}"
    );
    let o = run(&dir, &["refs", "BaseForm", "--kind", "inherit", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{v}");
    assert_eq!(items[1]["qualifier"], "forms");
    assert_eq!(items[1]["resolution"], "module");
    assert_eq!(v["uses"]["by_kind"]["inherit"], 2);
    assert_eq!(v["uses"]["by_kind"]["import"], 1);
    assert_eq!(v["source"], "syntax");

    // `self.items()` is this class's; `d.items()` and `self.fields.items()` are only the
    // name, and come last, marked.
    let text = stdout(&run(&dir, &["refs", "items"]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "pkg/admin.py:13:11: call items (in build) (name match): d.items()",
            "pkg/forms.py:3:28: call items (in items) (name match): return self.fields.items()",
        ],
        "{text}"
    );

    let o = run(&dir, &["refs", "BaseForm", "--kind", "subclass"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "unknown kind `subclass`; the kinds are: call, decorator, import, inherit, read, type"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn impact_lists_subclasses_and_importers_before_callers() {
    let dir = uses_fixture("impact-kinds");
    assert_eq!(run(&dir, &["index"]).status.code(), Some(0));
    let text = stdout(&run(&dir, &["impact", "BaseForm"]));
    let sections: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| ["subclass", "importer", "caller", "config"].contains(w))
        .collect();
    assert_eq!(
        sections,
        [
            "subclass", "subclass", "importer", "caller", "caller", "config"
        ],
        "{text}"
    );
    assert!(
        text.contains("subclass pkg/admin.py:5: class UserForm inherits BaseForm"),
        "{text}"
    );
    assert!(
        text.contains("importer pkg/admin.py:1: imports `BaseForm`"),
        "{text}"
    );
    assert!(
        text.contains("caller   pkg/admin.py:12: method GroupForm.build calls BaseForm"),
        "{text}"
    );
    assert!(
        text.contains("caller   pkg/admin.py:10: field GroupForm.form_class uses BaseForm"),
        "{text}"
    );
    assert!(
        text.contains(
            "references: 6 in all (call 1, import 1, inherit 2, read 1, type 1); 0 by name only"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenario_tests_report_failures_at_their_step_and_coverage() {
    let dir = temp_dir("scenarios");
    std::fs::write(
        dir.join("flow.scenarios.yml"),
        "contract: builtin\n\
         scenarios:\n\
         \x20 - name: starts with the documents\n\
         \x20   params: {request: fix login}\n\
         \x20   facts: {stale_branches_exist: false}\n\
         \x20   steps:\n\
         \x20     - expect: {state: DOCUMENT_RESEARCH}\n\
         \x20 - name: expects the wrong state\n\
         \x20   params: {request: fix login}\n\
         \x20   facts: {stale_branches_exist: false}\n\
         \x20   steps:\n\
         \x20     - expect: {state: DOCUMENT_RESEARCH}\n\
         \x20     - submit: {documents_reviewed: [a.md], tools_used: [], summary: read}\n\
         \x20       expect: {state: EXPLORATION}\n",
    )
    .unwrap();
    let o = run(&dir, &["test", ".", "--coverage"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("scenario starts with the documents ... ok"),
        "{text}"
    );
    assert!(
        text.contains("scenario expects the wrong state ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains(
            "flow.scenarios.yml:13:9: step 2: expected state `EXPLORATION`, got `QUERY_FRAME`"
        ),
        "{text}"
    );
    assert!(
        text.contains("test result: FAILED. 1 passed; 1 failed"),
        "{text}"
    );
    assert!(text.contains("coverage of builtin: 2 of "), "{text}");
    assert!(
        text.contains("not exercised: <built-in>/contracts/phase_contract.yml:"),
        "{text}"
    );

    // A file that is not a scenario file is reported with its place and not run.
    std::fs::write(dir.join("bad.scenarios.yml"), "scenarios:\n  - nme: x\n").unwrap();
    let o = run(&dir, &["test", "bad.scenarios.yml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown key `nme` in `scenarios.0`") && err.contains("bad.scenarios.yml:2:5"),
        "{err}"
    );

    let empty = temp_dir("scenarios-none");
    let o = run(&empty, &["test"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no scenario files"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn show_prints_the_effective_contract_with_origins() {
    let dir = temp_dir("show");
    std::fs::create_dir_all(dir.join(".code-intel")).unwrap();
    std::fs::write(
        dir.join(".code-intel/phase_contract.yml"),
        "extends: builtin\ncounters:\n  failure_count:\n    limit: 5\nstates:\n  EXPLORATION:\n    instruction:\n      en: \"Explore {{ state }} with two tools.\"\n      ja: \"探索してください。\"\n",
    )
    .unwrap();
    let text = stdout(&run(&dir, &["show", "EXPLORATION"]));
    assert!(
        text.contains("instruction (from .code-intel/phase_contract.yml:8:11):"),
        "{text}"
    );
    assert!(
        text.contains("  | Explore EXPLORATION with two tools."),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("allowed tools: search_text")
                && l.contains("(from <built-in>/contracts/phase_contract.yml:")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("payload: {")
            && l.contains("(from <built-in>/contracts/phase_contract.yml:")),
        "{text}"
    );
    assert!(
        text.contains("  -> Q1 otherwise — <built-in>/contracts/phase_contract.yml:"),
        "{text}"
    );
    let text = stdout(&run(&dir, &["show", "--locale", "ja", "EXPLORATION"]));
    assert!(text.contains("  | 探索してください。"), "{text}");
    let text = stdout(&run(&dir, &["show"]));
    assert!(
        text.contains("failure_count: limit 5 (from .code-intel/phase_contract.yml:4:12)"),
        "{text}"
    );
    let text = stdout(&run(
        &dir,
        &["show", "--flags", "--quick", "--only-running"],
    ));
    assert!(
        !text.contains("## EXPLORATION"),
        "--quick skips exploration: {text}"
    );
    assert!(text.contains("flags: quick=true"), "{text}");
    for (args, expected) in [
        (
            &["show", "--intent", "NOPE"][..],
            "unknown intent `NOPE`; the contract's intents are: IMPLEMENT",
        ),
        (
            &["show", "NOPE"][..],
            "unknown state `NOPE`; the contract's states are:",
        ),
        (&["show", "--locale", "fr"][..], "unknown locale `fr`"),
    ] {
        let o = run(&dir, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scenario_expectations_on_counters_and_start_errors() {
    let dir = temp_dir("scenario-more");
    std::fs::write(
        dir.join("more.scenarios.yml"),
        "scenarios:\n\
         \x20 - name: counters are compared\n\
         \x20   params: {request: fix login}\n\
         \x20   steps:\n\
         \x20     - expect: {counters: {verify_failures: 7}}\n\
         \x20 - name: a start that fails as expected passes\n\
         \x20   flags: --only-verify --fast\n\
         \x20   steps:\n\
         \x20     - expect: {start_error: flags.conflict}\n\
         \x20 - name: a start that fails otherwise is reported\n\
         \x20   flags: --only-verify --fast\n\
         \x20   steps:\n\
         \x20     - expect: {start_error: flags.unknown}\n",
    )
    .unwrap();
    let text = stdout(&run(&dir, &["test", "."]));
    assert!(
        text.contains("expected counter `verify_failures` = 7, got"),
        "{text}"
    );
    assert!(
        text.contains("scenario a start that fails as expected passes ... ok"),
        "{text}"
    );
    assert!(
        text.contains("expected the start to fail with `flags.unknown`, got `flags.conflict`"),
        "{text}"
    );
    // Result sequences: contracts/agent_runner_task.scenarios.yml ("the worker runs
    // once, then the planner marks the task complete") needs one, and
    // `generated::every_shipped_scenario_passes` runs it.
    let _ = std::fs::remove_dir_all(&dir);
}

/// `paths` finds a payload sequence to every state the flags let run, and what it prints
/// is a scenario file that passes.
#[test]
fn paths_reach_every_state_and_print_passing_scenarios() {
    let dir = temp_dir("paths");
    let o = run(&dir, &["paths"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    let unreached: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# not reached by any generated payload sequence: "))
        .collect();
    // VERIFY_FAILED runs only under --only-verify.
    assert_eq!(unreached, ["VERIFY_FAILED"], "{text}");
    for state in [
        "BRANCH_INTERVENTION",
        "SEMANTIC",
        "QUALITY_REVIEW",
        "USER_ESCALATION",
        "SESSION_ABORTED",
    ] {
        assert!(
            text.contains(&format!("name: \"reach {state}\"")),
            "{state}: {text}"
        );
    }
    std::fs::write(dir.join("generated.scenarios.yml"), &text).unwrap();
    let o = run(&dir, &["test", "generated.scenarios.yml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let text = stdout(&run(&dir, &["paths", "--flags", "--only-verify"]));
    assert!(text.contains("name: \"reach VERIFY_FAILED\""), "{text}");
    let o = run(&dir, &["paths", "--facts", "[1]"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `serve` loads its contract for the code-intel server alone: a contract for another host
/// is refused as it loads, at its `host:` line, before anything is served.
#[test]
fn serve_refuses_a_contract_for_another_host_where_it_names_the_host() {
    let dir = temp_dir("serve-other-host");
    crate::support::git_repo(&dir, &[("a.py", "x = 1\n")]);
    let runner = repo().join("contracts/agent_runner_task.yml");
    let out = run(&dir, &["serve", "--contract", runner.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown host `agent-runner`")
            && stderr.contains("agent_runner_task.yml:22:7")
            && stderr.contains("known hosts: code-intel"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "stdout is the MCP transport");
}
