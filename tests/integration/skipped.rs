//! What the walk does not read is reported, never dropped silently: `code-intel search`
//! (text and JSON), the `search_text` and `search_files` tools and `code-intel index`
//! say which files and directories they skipped and why.
//!
//! Tests run as root, where a mode of 000 stops nothing: binary files and FIFOs are
//! skipped whoever runs the walk, and the permission cases run the binary under
//! `setpriv` with the capabilities that bypass file modes dropped (or as is, when this
//! process cannot read a mode-000 file), and say so when they cannot run at all.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use code_intel::codeintel::Root;
use code_intel::codeintel::Window;
use code_intel::codeintel::{
    FileQuery, SkipReason, TextQuery, search_files, search_text, search_text_rendered,
};
use code_intel::server::CodeTools;
use code_intel::server::SemanticTools;
use code_intel::server::call_code;
use code_intel::server::english;
use code_intel::server::{ChangeSource, IndexCache};
use serde_json::{Value, json};

use crate::support::{TempDir, binary};

/// A temporary directory that is made readable again before it is removed: tests here
/// take permissions away and may fail before they give them back.
struct SkippedRepo(TempDir);

impl std::ops::Deref for SkippedRepo {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for SkippedRepo {
    fn drop(&mut self) {
        make_readable(&self.0);
    }
}

fn temp_repo(name: &str) -> SkippedRepo {
    let path =
        std::env::temp_dir().join(format!("code-intel-skipped-{name}-{}", std::process::id()));
    if path.exists() {
        make_readable(&path);
    }
    let dir = SkippedRepo(TempDir::at(path));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/app.py"), "def needle():\n    return 1\n").unwrap();
    // Binary: a NUL byte after the pattern.
    std::fs::write(dir.join("data.bin"), b"needle\0\x01\x02").unwrap();
    // A FIFO: opening it would block until someone writes, so it must not be opened.
    let made = crate::sealed::command("mkfifo")
        .arg(dir.join("pipe.py"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    dir
}

fn make_readable(dir: &Path) {
    let _ = crate::sealed::command("chmod")
        .args(["-R", "u+rwx"])
        .arg(dir)
        .status();
}

fn all() -> Window {
    Window {
        offset: 0,
        limit: 0,
    }
}

fn needle() -> TextQuery {
    TextQuery {
        patterns: vec!["needle".into()],
        ..TextQuery::default()
    }
}

fn run(command: &mut Command, dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o = command.args(args).arg("--root").arg(dir).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn search_reports_the_binary_files_and_fifos_it_skipped() {
    let dir = temp_repo("search");
    let root = Root::open(&dir).unwrap();
    let r = search_text(&root, &needle(), all()).unwrap();
    assert_eq!(r.total, 1, "{r:?}");
    let skipped: Vec<(&str, SkipReason)> = r
        .skipped
        .paths
        .iter()
        .map(|p| (p.path.as_str(), p.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            ("data.bin", SkipReason::Binary),
            ("pipe.py", SkipReason::NotARegularFile)
        ]
    );
    // The rendered form the CLI prints reports the same.
    let rendered = search_text_rendered(&root, &needle(), all()).unwrap();
    assert_eq!(rendered.skipped, r.skipped);
    // Listing files does not read them: only the FIFO is left out.
    let files = search_files(&root, &FileQuery::default(), all()).unwrap();
    assert_eq!(files.files.items, ["data.bin", "src/app.py"]);
    assert_eq!(
        files
            .skipped
            .paths
            .iter()
            .map(|p| (p.path.as_str(), p.reason))
            .collect::<Vec<_>>(),
        [("pipe.py", SkipReason::NotARegularFile)]
    );

    // The CLI: a summary on stderr in text, the details in JSON.
    let (code, out, err) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["search", "needle"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(out, "src/app.py:1:def needle():\n");
    assert!(
        err.contains("note: not searched: 1 binary, 1 not a regular file"),
        "{err}"
    );
    let (code, out, _) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["search", "needle", "--json"],
    );
    assert_eq!(code, Some(0));
    let v = json_of(&out);
    assert_eq!(
        v["skipped"],
        json!({
            "count": 2,
            "by_reason": {"binary": 1, "not_a_regular_file": 1},
            "first": [
                {"location": "data.bin", "reason": "binary", "error": "binary file (a NUL byte at offset 6)"},
                {"location": "pipe.py", "reason": "not_a_regular_file", "error": "not a regular file (a FIFO, socket or device)"},
            ],
        })
    );
    let (_, out, _) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["files", "--json"],
    );
    assert_eq!(
        json_of(&out)["skipped"]["by_reason"],
        json!({"not_a_regular_file": 1})
    );
    // Nothing skipped, nothing said.
    let (_, out, err) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["search", "needle", "--json", "--path", "src"],
    );
    assert!(json_of(&out).get("skipped").is_none(), "{out}");
    let (_, _, err_text) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["search", "needle", "--path", "src"],
    );
    assert_eq!((err.as_str(), err_text.as_str()), ("", ""));
}

#[test]
fn search_tools_report_what_they_skipped() {
    let dir = temp_repo("tools");
    let root = Root::open(&dir).unwrap();
    let tools = CodeTools {
        root: root.clone(),
        index: IndexCache::new(root.clone(), ChangeSource::FileEvents),
        semantic: SemanticTools::start(root, &crate::sealed::environment()),
    };
    let call = |name: &str, args: Value| {
        call_code(&tools, name, args.as_object().cloned().unwrap(), english())
            .unwrap_or_else(|e| panic!("{name}: {e:?}"))
            .unwrap()
    };
    let text = call("search_text", json!({"patterns": ["needle"]}));
    assert_eq!(text["total"], 1, "{text}");
    assert_eq!(
        text["skipped"]["by_reason"],
        json!({"binary": 1, "not_a_regular_file": 1}),
        "{text}"
    );
    assert_eq!(text["skipped"]["first"][0]["location"], "data.bin");
    // A skipped file is not one the client has seen: no `path` field names it.
    let mut seen = std::collections::BTreeSet::new();
    code_intel::server::paths_in(&text, &mut seen);
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["src/app.py"]);
    let files = call("search_files", json!({"globs": ["*.py"]}));
    assert_eq!(files["items"], json!(["src/app.py"]), "{files}");
    assert_eq!(files["skipped"]["count"], 1, "{files}");
    assert_eq!(files["skipped"]["first"][0]["location"], "pipe.py");
}

#[test]
fn index_reports_fifos_and_files_too_large_by_path() {
    let dir = temp_repo("index");
    std::fs::write(dir.join("big.py"), "x = 1\n".repeat(400_000)).unwrap();
    let (code, out, err) = run(&mut crate::support::code_intel(), &dir, &["index"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 too large"), "{out}");
    assert!(
        err.contains("note: not indexed: 1 not a regular file, 1 too large"),
        "{err}"
    );
    let (code, out, _) = run(
        &mut crate::support::code_intel(),
        &dir,
        &["index", "--json"],
    );
    assert_eq!(code, Some(0));
    let v = json_of(&out);
    assert_eq!(
        v["skipped"]["by_reason"],
        json!({"not_a_regular_file": 1, "too_large": 1}),
        "{out}"
    );
    let first: Vec<&str> = v["skipped"]["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["location"].as_str().unwrap())
        .collect();
    assert_eq!(first, ["big.py", "pipe.py"]);
}

/// A command that runs the binary with file modes applying to it, or None (and why on
/// stderr) when there is no way to: this process reads a mode-000 file (root) and
/// `setpriv` cannot drop the capabilities that let it.
fn binary_bound_by_file_modes(probe_dir: &Path) -> Option<Command> {
    let probe = probe_dir.join("probe");
    std::fs::write(&probe, "x").unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o000)).unwrap();
    let command = if std::fs::read(&probe).is_err() {
        Some(crate::support::code_intel())
    } else {
        let drop = ["--bounding-set", "-dac_override,-dac_read_search", "--"];
        let denied = crate::sealed::command("setpriv")
            .args(drop)
            .arg("cat")
            .arg(&probe)
            .output()
            .is_ok_and(|o| !o.status.success());
        denied.then(|| {
            let mut c = crate::sealed::command("setpriv");
            c.args(drop).arg(binary());
            c
        })
    };
    std::fs::remove_file(&probe).unwrap();
    if command.is_none() {
        let _ = writeln!(
            std::io::stderr(),
            "skipping the permission-denied cases: this process reads files whatever their mode (root) and `setpriv` cannot drop CAP_DAC_OVERRIDE"
        );
    }
    command
}

#[test]
fn search_and_index_report_files_and_directories_they_cannot_read() {
    let dir = temp_repo("denied");
    std::fs::create_dir_all(dir.join("secret")).unwrap();
    std::fs::write(dir.join("secret/hidden.py"), "needle = 1\n").unwrap();
    std::fs::write(dir.join("src/locked.py"), "def needle_too(): pass\n").unwrap();
    let Some(mut command) = binary_bound_by_file_modes(&dir) else {
        return;
    };
    let mode = |path: &str, mode: u32| {
        std::fs::set_permissions(dir.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
    };
    mode("secret", 0o000);
    mode("src/locked.py", 0o000);

    let (code, out, err) = run(&mut command, &dir, &["search", "needle"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "src/app.py:1:def needle():\n");
    // One line per path that could not be read, as rg prints them, then the summary.
    assert!(
        err.contains("code-intel: secret: Permission denied (os error 13)\n"),
        "{err}"
    );
    assert!(
        err.contains("code-intel: src/locked.py: Permission denied (os error 13)\n"),
        "{err}"
    );
    assert!(
        err.contains("note: not searched: 2 permission denied, 1 binary, 1 not a regular file"),
        "{err}"
    );
    let mut command = binary_bound_by_file_modes(&dir).unwrap();
    let (_, out, _) = run(&mut command, &dir, &["search", "needle", "--json"]);
    let v = json_of(&out);
    assert_eq!(v["skipped"]["by_reason"]["permission_denied"], 2, "{out}");
    // Those that could not be read come first.
    assert_eq!(v["skipped"]["first"][0]["location"], "secret", "{out}");
    assert_eq!(
        v["skipped"]["first"][1]["location"], "src/locked.py",
        "{out}"
    );

    let mut command = binary_bound_by_file_modes(&dir).unwrap();
    let (code, out, err) = run(&mut command, &dir, &["index", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v = json_of(&out);
    assert_eq!(
        v["skipped"]["by_reason"],
        json!({"permission_denied": 2, "not_a_regular_file": 1}),
        "{out}"
    );
    let mut command = binary_bound_by_file_modes(&dir).unwrap();
    let (_, _, err) = run(&mut command, &dir, &["index"]);
    assert!(
        err.contains("code-intel: src/locked.py: Permission denied (os error 13)\n"),
        "{err}"
    );
    make_readable(&dir);
}
