//! `checklist.verify_evidence`: evidence must cite changed lines of a repository file that
//! hold a real implementation. Most cases are rows of one table: a file, the lines cited,
//! the lines the task changed and the expected outcome.

use code_intel::codeintel::Root;
use code_intel::server::{ChangedLines, EvidenceFailure, verify_checklist};
use code_intel::session::ActionFailure;
use serde_json::{Value, json};

use crate::support::TempDir;

/// A fresh, empty directory for one test (or one row of a table).
fn temp_repo(name: &str) -> TempDir {
    TempDir::create(&format!(
        "code-intel-evidence-{name}-{}",
        std::process::id()
    ))
}

fn changed(entries: &[(&str, &[(u32, u32)])]) -> ChangedLines {
    entries
        .iter()
        .map(|(path, ranges)| {
            (
                (*path).to_string(),
                ranges.iter().map(|(a, b)| *a..=*b).collect(),
            )
        })
        .collect()
}

fn done(item: &str, evidence: &str) -> Value {
    json!({"item": item, "status": "done", "evidence": evidence})
}

/// One row: the file (name and content), the lines cited (`"3"`, `"3-5"`), the lines the
/// task changed in that file, and the expected outcome (`None`: accepted).
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(u32, u32)],
    Option<&'static str>,
);

/// Every line of a small file changed (as for a new file).
const ALL: &[(u32, u32)] = &[(1, 1000)];

const ROWS: &[Row] = &[
    // Python stubs and real code.
    (
        "a.py",
        "def f():\n    pass\n",
        "1-2",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def f():\n    ...\n",
        "1-2",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def f():\n    raise NotImplementedError\n",
        "2",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def f():\n    raise NotImplementedError()\n",
        "1-2",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def f(x):\n    \"\"\"Doubles x.\"\"\"\n    raise NotImplementedError(\"later\")\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def f():\n    # TODO: write this\n    pass\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.py",
        "def double(x):\n    return x * 2\n",
        "1-2",
        ALL,
        None,
    ),
    ("a.py", "def double(x):\n    return x * 2\n", "2", ALL, None),
    // A range inside a class: judged by the class, whose methods are real.
    (
        "a.py",
        "class A:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n",
        "2-6",
        ALL,
        None,
    ),
    (
        "a.py",
        "class A:\n    def a(self):\n        pass\n\n    def b(self):\n        ...\n",
        "1-6",
        ALL,
        Some("empty_impl"),
    ),
    // A real function with a TODO comment added inside it: the comment is not the code.
    (
        "a.py",
        "def f(x):\n    y = x + 1\n    # TODO: handle overflow\n    return y\n",
        "3",
        ALL,
        Some("empty_impl"),
    ),
    // Outside any function: the lines themselves must hold code.
    ("a.py", "import os\n\nTIMEOUT = 30\n", "3", ALL, None),
    (
        "a.py",
        "import os\n\n# TIMEOUT = 30\n",
        "3",
        ALL,
        Some("empty_impl"),
    ),
    ("a.py", "import os\n\n\n", "2-3", ALL, Some("empty_impl")),
    // Rust.
    (
        "a.rs",
        "fn f() -> u32 {\n    todo!()\n}\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.rs",
        "fn f() {\n    unimplemented!(\"later\");\n}\n",
        "2",
        ALL,
        Some("empty_impl"),
    ),
    ("a.rs", "fn f() {}\n", "1", ALL, Some("empty_impl")),
    (
        "a.rs",
        "fn f() {\n    // TODO\n}\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.rs",
        "fn double(x: u32) -> u32 {\n    x * 2\n}\n",
        "1-3",
        ALL,
        None,
    ),
    (
        "a.rs",
        "struct S;\n\nimpl S {\n    fn a(&self) -> u32 {\n        1\n    }\n\n    fn b(&self) -> u32 {\n        2\n    }\n}\n",
        "4-10",
        ALL,
        None,
    ),
    // JavaScript and TypeScript.
    (
        "a.js",
        "function f() {\n  throw new Error(\"Not implemented\");\n}\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.js",
        "export const f = () => {\n  throw new Error('not implemented');\n};\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.js",
        "function add(a, b) {\n  return a + b;\n}\n",
        "1-3",
        ALL,
        None,
    ),
    (
        "a.ts",
        "class A {\n  run(): void {\n    throw new Error(\"NOT IMPLEMENTED\");\n  }\n}\n",
        "2-4",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.ts",
        "class A {\n  run(x: number): number {\n    return x + 1;\n  }\n}\n",
        "2-4",
        ALL,
        None,
    ),
    // A different error is real error handling, not a placeholder.
    (
        "a.ts",
        "function f(x: number): number {\n  throw new Error(\"negative input\");\n}\n",
        "1-3",
        ALL,
        None,
    ),
    // Go, Java, C: empty bodies and real ones.
    (
        "a.go",
        "package a\n\nfunc F() {\n}\n",
        "3-4",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.go",
        "package a\n\nfunc F() int {\n\treturn 1\n}\n",
        "3-5",
        ALL,
        None,
    ),
    (
        "A.java",
        "class A {\n  void run() {\n  }\n}\n",
        "2-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "A.java",
        "class A {\n  int run() {\n    return 1;\n  }\n}\n",
        "2-4",
        ALL,
        None,
    ),
    ("a.c", "int f(void) {\n}\n", "1-2", ALL, Some("empty_impl")),
    (
        "a.c",
        "int f(void) {\n  /* TODO */\n}\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.c",
        "int f(int x) {\n  return x + 1;\n}\n",
        "1-3",
        ALL,
        None,
    ),
    // The other parsed languages.
    (
        "a.rb",
        "def f\n  raise NotImplementedError, 'later'\nend\n",
        "1-3",
        ALL,
        Some("empty_impl"),
    ),
    ("a.rb", "def f(x)\n  x + 1\nend\n", "1-3", ALL, None),
    (
        "a.php",
        "<?php\nfunction f() {\n    throw new Exception('Not implemented');\n}\n",
        "2-4",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.php",
        "<?php\nfunction f($x) {\n    return $x + 1;\n}\n",
        "2-4",
        ALL,
        None,
    ),
    (
        "A.cs",
        "class A {\n  void Run() {\n    throw new NotImplementedException();\n  }\n}\n",
        "2-4",
        ALL,
        Some("empty_impl"),
    ),
    ("a.cpp", "int f() {\n  return 1;\n}\n", "1-3", ALL, None),
    // Decorations implement nothing: a decorated stub is still a stub.
    (
        "a.py",
        "class A:\n    @property\n    def f(self):\n        pass\n",
        "2-4",
        ALL,
        Some("empty_impl"),
    ),
    (
        "a.rs",
        "#[inline]\nfn f() {}\n",
        "1-2",
        ALL,
        Some("empty_impl"),
    ),
    // Files without a grammar: the textual rule.
    (
        "README.md",
        "# Usage\n\nRun `make test`.\n",
        "1-3",
        ALL,
        None,
    ),
    (
        "README.md",
        "<!-- TODO: write usage -->\n",
        "1",
        ALL,
        Some("empty_impl"),
    ),
    (
        "README.md",
        "<!--\nTODO: usage\n-->\n",
        "2",
        ALL,
        Some("empty_impl"),
    ),
    ("config.yml", "server:\n  timeout: 30\n", "2", ALL, None),
    (
        "config.yml",
        "# timeout: 30\n# TODO\n",
        "1-2",
        ALL,
        Some("empty_impl"),
    ),
    // The range must lie inside the file.
    (
        "a.py",
        "x = 1\ny = 2\n",
        "2-5",
        ALL,
        Some("line_out_of_range"),
    ),
    (
        "a.py",
        "x = 1\ny = 2\n",
        "7",
        ALL,
        Some("line_out_of_range"),
    ),
    ("a.py", "", "1", ALL, Some("line_out_of_range")),
    // The range must overlap lines this task changed.
    (
        "a.py",
        "x = 1\ny = 2\nz = 3\n",
        "1",
        &[(3, 3)],
        Some("not_changed"),
    ),
    (
        "a.py",
        "x = 1\ny = 2\nz = 3\n",
        "1-2",
        &[],
        Some("not_changed"),
    ),
    ("a.py", "x = 1\ny = 2\nz = 3\n", "2-3", &[(3, 3)], None),
];

#[test]
fn table_of_files_ranges_and_outcomes() {
    let base = temp_repo("table");
    let mut wrong = Vec::new();
    for (index, (file, content, lines, changed_lines, expected)) in ROWS.iter().enumerate() {
        let dir = base.join(index.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), content).unwrap();
        let root = Root::open(&dir).unwrap();
        let evidence = format!("{file}:{lines}");
        let checklist = json!([done("the item", &evidence)]);
        let result = verify_checklist(&root, &checklist, &changed(&[(file, changed_lines)]));
        let got = result.as_ref().err().map(EvidenceFailure::outcome);
        if got != *expected {
            wrong.push(format!(
                "row {index}: {evidence} in {content:?}: expected {expected:?}, got {result:?}"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A repository `repo/` with `src/a.py` (a real function, all lines changed) and a secret
/// file next to it, outside the repository.
fn repository(name: &str) -> (TempDir, Root, ChangedLines) {
    let base = temp_repo(name);
    std::fs::create_dir_all(base.join("repo/src")).unwrap();
    std::fs::write(
        base.join("repo/src/a.py"),
        "def double(x):\n    return x * 2\n",
    )
    .unwrap();
    std::fs::write(base.join("secret.py"), "def s():\n    return 1\n").unwrap();
    let root = Root::open(&base.join("repo")).unwrap();
    let changed = changed(&[("src/a.py", &[(1, 2)])]);
    (base, root, changed)
}

fn outcome_of(root: &Root, checklist: &Value, changed: &ChangedLines) -> Option<&'static str> {
    verify_checklist(root, checklist, changed)
        .err()
        .map(|f| f.outcome())
}

#[test]
fn paths_must_stay_inside_the_repository() {
    let (base, root, changed) = repository("paths");
    let outside = base.join("secret.py");
    let cases: Vec<(String, Option<&str>)> = vec![
        ("src/a.py:1-2".into(), None),
        ("./src/a.py:2".into(), None),
        ("src/../src/a.py:2".into(), None),
        (
            format!("{}:1-2", base.join("repo/src/a.py").display()),
            None,
        ),
        ("../secret.py:1".into(), Some("outside_root")),
        ("src/../../secret.py:1".into(), Some("outside_root")),
        (format!("{}:1", outside.display()), Some("outside_root")),
        ("/etc/passwd:1".into(), Some("outside_root")),
        ("src/missing.py:1".into(), Some("file_not_found")),
        ("src:1".into(), Some("file_not_found")),
    ];
    for (evidence, expected) in cases {
        let checklist = json!([done("x", &evidence)]);
        assert_eq!(
            outcome_of(&root, &checklist, &changed),
            expected,
            "{evidence}"
        );
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, base.join("repo/src/link.py")).unwrap();
        let checklist = json!([done("x", "src/link.py:1")]);
        assert_eq!(
            outcome_of(&root, &checklist, &changed),
            Some("outside_root")
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn evidence_and_items_must_be_well_formed() {
    let (base, root, changed) = repository("format");
    for evidence in [
        "line 42 in auth.py",
        "src/a.py",
        "src/a.py:0",
        "src/a.py:2-1",
        "src/a.py:L1",
        "src/a.py:1:4",
        "",
    ] {
        let checklist = json!([done("x", evidence)]);
        assert_eq!(
            outcome_of(&root, &checklist, &changed),
            Some("invalid_format"),
            "{evidence:?}"
        );
    }
    // Spaces around the numbers are fine.
    let checklist = json!([done("x", " src/a.py: 1 - 2 ")]);
    assert_eq!(outcome_of(&root, &checklist, &changed), None);
    // Untrusted JSON of the wrong shape is a failure, never a panic.
    for checklist in [
        json!({"item": "x"}),
        json!("src/a.py:1"),
        json!(null),
        json!(["src/a.py:1"]),
        json!([{"item": "x", "status": "done"}]),
        json!([{"item": "x", "status": "done", "evidence": 12}]),
        json!([{"item": "x", "status": 1, "evidence": "src/a.py:1"}]),
        json!([{"item": ["x"], "evidence": "src/a.py:1"}]),
    ] {
        assert_eq!(
            outcome_of(&root, &checklist, &changed),
            Some("invalid_format"),
            "{checklist}"
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn only_done_items_are_checked_and_the_first_failure_wins() {
    let (base, root, changed) = repository("order");
    let checklist = json!([
        {"item": "not needed", "status": "skipped", "reason": "covered elsewhere already", "evidence": "../secret.py:1"},
        {"item": "no evidence", "status": "skipped", "reason": "covered elsewhere already"},
        done("double", "src/a.py:1-2"),
    ]);
    assert_eq!(verify_checklist(&root, &checklist, &changed), Ok(()));
    let checklist = json!([
        done("double", "src/a.py:1-2"),
        done("missing", "src/missing.py:3"),
        done("outside", "../secret.py:1"),
    ]);
    let failure = verify_checklist(&root, &checklist, &changed).unwrap_err();
    assert_eq!(
        failure,
        EvidenceFailure::FileNotFound {
            item: "missing".into(),
            evidence: "src/missing.py:3".into(),
            file_path: "src/missing.py".into(),
        }
    );
    assert_eq!(verify_checklist(&root, &json!([]), &changed), Ok(()));
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn failures_carry_the_arguments_their_messages_use() {
    let (base, root, _) = repository("args");
    std::fs::write(base.join("repo/src/b.py"), "def f():\n    pass\n").unwrap();
    let changed = changed(&[("src/a.py", &[(2, 2)]), ("src/b.py", &[(1, 1), (3, 4)])]);
    let failure = |evidence: &str| {
        ActionFailure::from(
            verify_checklist(&root, &json!([done("Add double", evidence)]), &changed).unwrap_err(),
        )
    };
    let out_of_range = failure("src/a.py:2-9");
    assert_eq!(out_of_range.outcome, "line_out_of_range");
    assert_eq!(
        Value::Object(out_of_range.args),
        json!({"evidence": "src/a.py:2-9", "item": "Add double", "file_path": "src/a.py", "line": 9, "total": 2})
    );
    let not_changed = failure("src/a.py:1");
    assert_eq!(not_changed.outcome, "not_changed");
    assert_eq!(
        Value::Object(not_changed.args),
        json!({"evidence": "src/a.py:1", "item": "Add double", "file_path": "src/a.py", "changed_ranges": "2"})
    );
    let invalid = failure("line 2 of a.py");
    assert_eq!(
        Value::Object(invalid.args),
        json!({"evidence": "line 2 of a.py", "item": "Add double"})
    );
    // The registry entry declares exactly these outcomes, each with the args produced.
    let registry = code_intel::server::registry();
    let spec = registry.action("checklist.verify_evidence").unwrap();
    let declared: Vec<&str> = spec.outcomes.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        declared,
        [
            "invalid_format",
            "outside_root",
            "file_not_found",
            "line_out_of_range",
            "not_changed",
            "empty_impl"
        ]
    );
    for produced in [
        failure("src/a.py:2-9"),
        failure("src/a.py:1"),
        failure("line 2 of a.py"),
        failure("../secret.py:1"),
        failure("src/b.py:1"),
        failure("src/c.py:1"),
    ] {
        let (_, args) = spec
            .outcomes
            .iter()
            .find(|(o, _)| *o == produced.outcome)
            .unwrap();
        let mut names: Vec<&str> = produced.args.keys().map(String::as_str).collect();
        let mut declared = args.clone();
        names.sort_unstable();
        declared.sort_unstable();
        assert_eq!(names, declared, "{}", produced.outcome);
    }
    let _ = std::fs::remove_dir_all(&base);
}
