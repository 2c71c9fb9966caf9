//! The code-intelligence tools on a small repository with several languages: search,
//! files, the symbol index (including a file that changes between two queries), outlines,
//! structure, impact, query routing, bounded output and path confinement.

use std::path::Path;

use code_intel::codeintel::Index;
use code_intel::codeintel::Root;
use code_intel::codeintel::Window;
use code_intel::codeintel::analyze_impact;
use code_intel::codeintel::query;
use code_intel::codeintel::{Case, FileQuery, TextQuery, search_files, search_text};
use code_intel::codeintel::{
    analyze_structure, find_definitions, find_references, function_at_line, get_symbols,
};
use serde_json::Value;

use crate::support::TempDir;

const FILES: &[(&str, &str)] = &[
    (".gitignore", "ignored/\n"),
    (
        "ignored/secret.py",
        "def hidden_function():\n    return 1\n",
    ),
    (
        "src/lib.rs",
        "use std::fmt;\n\npub struct Parser {\n    depth: usize,\n}\n\nimpl Parser {\n    pub fn parse_config(&self) -> usize {\n        self.depth\n    }\n}\n\npub fn build() -> usize {\n    let p = Parser { depth: 1 };\n    p.parse_config()\n}\n",
    ),
    (
        "app/models.py",
        "import os\nfrom typing import Optional\n\nclass User:\n    def save(self):\n        return os.getcwd()\n\n\ndef get_user() -> Optional[User]:\n    return User()\n",
    ),
    (
        "app/views.py",
        "from app.models import get_user\n\n\ndef show():\n    user = get_user()\n    return user\n",
    ),
    (
        "tests/test_models.py",
        "from app.models import get_user\n\n\ndef test_get_user():\n    assert get_user() is not None\n",
    ),
    (
        "docs/usage.md",
        "# Usage\n\nCall `get_user` to load the current user.\n",
    ),
    ("config/settings.yml", "loader: get_user\n"),
    (
        "web/app.js",
        "import { x } from './x.js';\n\nclass Widget {\n  render() {\n    return document.querySelector('.widget-box');\n  }\n}\n\nfunction mount() {\n  new Widget().render();\n}\n",
    ),
    (
        "web/index.html",
        "<div class=\"widget-box\" id=\"main\">hello</div>\n",
    ),
    ("web/style.css", ".widget-box {\n  color: red;\n}\n"),
    (
        "go/main.go",
        "package main\n\nimport \"fmt\"\n\nfunc Greet(name string) string {\n\treturn fmt.Sprintf(\"hi %s\", name)\n}\n\nfunc main() {\n\tGreet(\"x\")\n}\n",
    ),
    (
        "java/Main.java",
        "import java.util.List;\n\npublic class Main {\n    public static int twice(int x) { return x * 2; }\n    public static void main(String[] a) { twice(2); }\n}\n",
    ),
    (
        "c/util.c",
        "#include <stdio.h>\n\nint add(int a, int b) {\n    return a + b;\n}\n\nint main(void) {\n    return add(1, 2);\n}\n",
    ),
    (
        "ruby/greeter.rb",
        "require 'json'\n\nclass Greeter\n  def greet\n    'hi'\n  end\nend\n",
    ),
    (
        "notes.txt",
        "unused_helper is mentioned here only as text\n",
    ),
    (
        "src/unused.rs",
        "// unused_helper keeps old callers compiling\npub fn unused_helper() {}\n",
    ),
];

/// A fresh repository in a temporary directory.
fn repo(name: &str) -> TempDir {
    let dir = TempDir::claim(&format!("code-intel-tools-{name}-{}", std::process::id()));
    for (path, text) in FILES {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    // A binary file that contains the pattern: it must be skipped.
    std::fs::write(dir.join("data.bin"), b"get_user\0\0\x01binary").unwrap();
    dir
}

fn all() -> Window {
    Window {
        offset: 0,
        limit: 0,
    }
}

fn text(patterns: &[&str]) -> TextQuery {
    TextQuery {
        patterns: patterns.iter().map(|p| (*p).to_string()).collect(),
        ..TextQuery::default()
    }
}

#[test]
fn search_text_finds_literals_regexes_words_and_respects_ignores() {
    let dir = repo("search");
    let root = Root::open(&dir).unwrap();
    let r = search_text(&root, &text(&["get_user"]), all()).unwrap();
    let paths: Vec<&str> = r.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "app/models.py",
            "app/views.py",
            "config/settings.yml",
            "docs/usage.md",
            "tests/test_models.py"
        ],
        "binary and ignored files are skipped"
    );
    let first = &r.files[0].matches[0];
    assert_eq!(
        (first.line, first.column, first.text.as_str()),
        (9, 5, "def get_user() -> Optional[User]:")
    );
    let regex = search_text(
        &root,
        &TextQuery {
            regex: true,
            ..text(&[r"fn \w+_config"])
        },
        all(),
    )
    .unwrap();
    assert_eq!(regex.total, 1);
    let insensitive = search_text(
        &root,
        &TextQuery {
            case: Case::Insensitive,
            word: true,
            ..text(&["WIDGET"])
        },
        all(),
    )
    .unwrap();
    assert!(insensitive.files.iter().any(|f| f.path == "web/app.js"));
    let word = search_text(
        &root,
        &TextQuery {
            word: true,
            ..text(&["get"])
        },
        all(),
    )
    .unwrap();
    assert_eq!(word.total, 0, "`get` is not a whole word in get_user");
    let globbed = search_text(
        &root,
        &TextQuery {
            globs: vec!["*.py".into()],
            ..text(&["get_user"])
        },
        all(),
    )
    .unwrap();
    assert!(globbed.files.iter().all(|f| f.path.ends_with(".py")));
    let typed = search_text(
        &root,
        &TextQuery {
            types: vec!["md".into()],
            ..text(&["get_user"])
        },
        all(),
    )
    .unwrap();
    assert_eq!(typed.files.len(), 1);
    let context = search_text(
        &root,
        &TextQuery {
            context: 1,
            ..text(&["def save"])
        },
        all(),
    )
    .unwrap();
    let m = &context.files[0].matches[0];
    assert_eq!(
        (m.before.as_slice(), m.after.as_slice()),
        (
            &["class User:".to_string()][..],
            &["        return os.getcwd()".to_string()][..]
        )
    );
    // Literal search means literal: regex metacharacters match themselves.
    let literal = search_text(&root, &text(&["Optional[User]"]), all()).unwrap();
    assert_eq!(literal.total, 1);
    assert_eq!(
        search_text(&root, &text(&["p.parse_config("]), all())
            .unwrap()
            .total,
        1
    );
    assert_eq!(search_text(&root, &text(&["a+b"]), all()).unwrap().total, 0);
    // A class that could match a newline still matches within lines only.
    let class = search_text(
        &root,
        &TextQuery {
            regex: true,
            ..text(&[r"fn [^(]+\("])
        },
        all(),
    )
    .unwrap();
    assert_eq!(class.total, 3);
    let multi = search_text(&root, &text(&["hidden_function", "Greeter"]), all()).unwrap();
    assert_eq!(
        multi.total, 1,
        "several patterns; the ignored file stays out"
    );
}

#[test]
fn lists_are_bounded_and_say_so() {
    let dir = repo("bounded");
    let root = Root::open(&dir).unwrap();
    let page = search_text(
        &root,
        &text(&["get_user"]),
        Window {
            offset: 1,
            limit: 2,
        },
    )
    .unwrap();
    assert_eq!(
        (page.total, page.returned, page.truncated, page.next_offset),
        (8, 2, true, Some(3))
    );
    let files = search_files(
        &root,
        &FileQuery {
            globs: vec!["*.py".into()],
            ..FileQuery::default()
        },
        Window {
            offset: 0,
            limit: 2,
        },
    )
    .unwrap()
    .files;
    assert_eq!((files.total, files.returned, files.truncated), (3, 2, true));
    assert_eq!(files.items, ["app/models.py", "app/views.py"]);
}

#[test]
fn definitions_references_and_outlines_across_languages() {
    let dir = repo("symbols");
    let root = Root::open(&dir).unwrap();
    for (name, path, kind) in [
        ("User", "app/models.py", "class"),
        ("get_user", "app/models.py", "function"),
        ("parse_config", "src/lib.rs", "method"),
        ("Widget", "web/app.js", "class"),
        ("Greet", "go/main.go", "function"),
        ("twice", "java/Main.java", "method"),
        ("add", "c/util.c", "function"),
        ("Greeter", "ruby/greeter.rb", "class"),
    ] {
        let d = find_definitions(&Index::open(&root).unwrap(), name, None, all()).unwrap();
        assert!(
            d.symbols
                .items
                .iter()
                .any(|h| h.path == path && h.kind == kind),
            "{name}: {:?}",
            d.symbols.items
        );
    }
    let refs =
        find_references(&root, &Index::open(&root).unwrap(), "get_user", None, all()).unwrap();
    assert_eq!(refs.source, "syntax");
    let ref_paths: Vec<&str> = refs.symbols.items.iter().map(|h| h.path.as_str()).collect();
    assert!(
        ref_paths.contains(&"app/views.py") && ref_paths.contains(&"tests/test_models.py"),
        "{ref_paths:?}"
    );
    assert!(
        find_references(&root, &Index::open(&root).unwrap(), "add", None, all())
            .unwrap()
            .symbols
            .items
            .iter()
            .any(|h| h.path == "c/util.c" && h.line == 8),
        "C calls are references"
    );
    // Never called in code: the text fallback finds the mentions and says so.
    let fallback = find_references(
        &root,
        &Index::open(&root).unwrap(),
        "unused_helper",
        None,
        all(),
    )
    .unwrap();
    assert_eq!(fallback.source, "text");
    assert!(fallback.symbols.items.iter().any(|h| h.path == "notes.txt"));
    assert!(
        fallback
            .symbols
            .items
            .iter()
            .all(|h| !(h.path == "src/unused.rs" && h.line == 2)),
        "the definition line is not a reference"
    );
    let outline = get_symbols(&root, &Index::open(&root).unwrap(), "src/lib.rs", all()).unwrap();
    let names: Vec<(&str, &str)> = outline
        .symbols
        .items
        .iter()
        .map(|h| (h.kind.as_str(), h.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("struct", "Parser"),
            ("field", "depth"),
            ("impl", "Parser"),
            ("method", "parse_config"),
            ("fn", "build")
        ]
    );
    let at = function_at_line(&root, &Index::open(&root).unwrap(), "src/lib.rs", 9).unwrap();
    assert_eq!(at.function.unwrap().name, "parse_config");
    let structure = analyze_structure(&root, &Index::open(&root).unwrap(), "app", all()).unwrap();
    let models = structure
        .files
        .items
        .iter()
        .find(|f| f.path == "app/models.py")
        .unwrap();
    assert_eq!(models.imports, ["import os", "from typing import Optional"]);
    assert_eq!(models.outline[0].name, "User");
    assert_eq!(models.outline[0].children[0].name, "save");
}

#[test]
fn a_changed_file_is_reindexed_before_answering() {
    let dir = repo("fresh");
    let root = Root::open(&dir).unwrap();
    // Queries never write: the index on disk comes from an explicit refresh, and a file
    // that changed after it is re-tagged in memory for each answer.
    code_intel::codeintel::refresh(&root).unwrap();
    let before = find_definitions(&Index::open(&root).unwrap(), "build", None, all()).unwrap();
    assert_eq!(before.symbols.total, 1);
    let source = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&source)
        .unwrap()
        .replace("pub fn build()", "pub fn assemble()");
    std::fs::write(&source, text).unwrap();
    let after = find_definitions(&Index::open(&root).unwrap(), "build", None, all()).unwrap();
    assert_eq!(after.symbols.total, 0, "no answer from a file that changed");
    assert_eq!(after.freshness.reindexed, ["src/lib.rs"]);
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "assemble", None, all())
            .unwrap()
            .symbols
            .total,
        1
    );
    // A deleted file drops out of answers too.
    std::fs::remove_file(dir.join("ruby/greeter.rb")).unwrap();
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "Greeter", None, all())
            .unwrap()
            .symbols
            .total,
        0
    );
}

#[test]
fn impact_lists_callers_tests_docs_and_markup_with_reasons() {
    let dir = repo("impact");
    let root = Root::open(&dir).unwrap();
    let impact = analyze_impact(
        &root,
        &Index::open(&root).unwrap(),
        &["get_user".to_string()],
        all(),
    )
    .unwrap();
    assert!(
        impact
            .callers
            .items
            .iter()
            .any(|c| c.name == "show" && c.path == "app/views.py")
    );
    assert!(
        impact
            .tests
            .items
            .iter()
            .any(|t| t.path == "tests/test_models.py" && t.why.contains("test"))
    );
    let docs: Vec<&str> = impact
        .config_and_docs
        .items
        .iter()
        .map(|t| t.path.as_str())
        .collect();
    assert!(
        docs.contains(&"docs/usage.md") && docs.contains(&"config/settings.yml"),
        "{docs:?}"
    );
    assert!(!impact.risk.reasons.is_empty());
    let markup = analyze_impact(
        &root,
        &Index::open(&root).unwrap(),
        &["web/style.css".to_string()],
        all(),
    )
    .unwrap();
    assert!(markup.names.contains(&"widget-box".to_string()));
    let used: Vec<&str> = markup
        .markup
        .items
        .iter()
        .map(|t| t.path.as_str())
        .collect();
    assert!(
        used.contains(&"web/index.html") && used.contains(&"web/app.js"),
        "{used:?}"
    );
    // Reproducible.
    let again = analyze_impact(
        &root,
        &Index::open(&root).unwrap(),
        &["get_user".to_string()],
        all(),
    )
    .unwrap();
    assert_eq!(impact.callers, again.callers);
}

#[test]
fn query_routes_and_says_where() {
    let dir = repo("query");
    let root = Root::open(&dir).unwrap();
    for (question, tool) in [
        ("where is get_user defined?", "find_definitions"),
        ("who calls get_user", "find_references"),
        ("what breaks if I change get_user", "analyze_impact"),
        ("structure of app", "analyze_structure"),
        ("files named *.go", "search_files"),
        ("find \"current user\"", "search_text"),
    ] {
        let a = query(&root, question, all()).unwrap();
        assert_eq!(a.tool, tool, "{question}: {}", a.why);
    }
}

fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let o = crate::support::code_intel()
        .args(args)
        .arg("--root")
        .arg(dir)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn paths_outside_the_root_are_refused() {
    let dir = repo("escape");
    std::fs::write(dir.parent().unwrap().join("outside.rs"), "fn outside() {}").unwrap();
    let root = Root::open(&dir).unwrap();
    assert!(
        get_symbols(&root, &Index::open(&root).unwrap(), "../outside.rs", all())
            .unwrap_err()
            .to_string()
            .contains("outside the repository root")
    );
    assert!(
        search_text(
            &root,
            &TextQuery {
                paths: vec!["../".into()],
                ..text(&["x"])
            },
            all()
        )
        .unwrap_err()
        .to_string()
        .contains("outside")
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            dir.parent().unwrap().join("outside.rs"),
            dir.join("link.rs"),
        )
        .unwrap();
        assert_eq!(
            get_symbols(&root, &Index::open(&root).unwrap(), "link.rs", all())
                .unwrap_err()
                .key(),
            "path.outside_root"
        );
        // The walk does not follow the link either.
        let found = search_text(&root, &text(&["fn outside"]), all()).unwrap();
        assert_eq!(found.total, 0);
    }
    let (code, _, err) = run(&dir, &["symbols", "../outside.rs"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("outside the repository root"), "{err}");
}

#[test]
fn the_cli_prints_like_rg_or_json_and_exits_by_result() {
    let dir = repo("cli");
    let (code, out, _) = run(&dir, &["search", "get_user", "--glob", "*.py"]);
    assert_eq!(code, Some(0));
    assert!(
        out.lines()
            .any(|l| l == "app/views.py:1:from app.models import get_user"),
        "{out}"
    );
    let (code, out, _) = run(&dir, &["search", "get_user", "--json", "--limit", "1"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["returned"].as_u64(), v["truncated"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(run(&dir, &["search", "no_such_text_anywhere"]).0, Some(1));
    assert_eq!(run(&dir, &["search", "(", "--regex"]).0, Some(2));
    let (code, out, _) = run(&dir, &["index", "--json"]);
    assert_eq!(code, Some(0));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["files"].as_u64().unwrap() >= 10);
    let (code, out, _) = run(&dir, &["defs", "Greet"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("go/main.go:5:"), "{out}");
    // Nothing found: exit 1, as README says, and a line saying so (stdout stays empty).
    let (code, out, err) = run(&dir, &["defs", "NoSuchSymbol"]);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(
        err.contains("no definition of `NoSuchSymbol` found"),
        "{err}"
    );
    let (code, out, _) = run(&dir, &["files", "*.rb"]);
    assert_eq!((code, out.as_str()), (Some(0), "ruby/greeter.rb\n"));
    let (code, out, _) = run(&dir, &["impact", "get_user", "--json"]);
    assert_eq!(code, Some(0));
    assert!(serde_json::from_str::<Value>(&out).unwrap()["risk"]["level"].is_string());
    let (code, out, _) = run(&dir, &["query", "where is Widget defined", "--json"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["tool"],
        "find_definitions"
    );
    // Without --json, query prints what the command it routed to prints (not JSON), and
    // says on stderr which one answered.
    let (code, out, err) = run(&dir, &["query", "where is Widget defined"]);
    assert_eq!(code, Some(0));
    assert!(serde_json::from_str::<Value>(&out).is_err(), "{out}");
    assert!(
        out.lines()
            .all(|l| l.contains(": ") && l.contains("Widget")),
        "{out}"
    );
    assert!(err.contains("query: answered by find_definitions"), "{err}");
}

#[test]
fn updates_write_a_delta_and_fold_it_when_it_grows() {
    use code_intel::codeintel::refresh;
    use code_intel::codeintel::{DELTA_FILE, INDEX_FILE};
    let dir = repo("delta");
    let root = Root::open(&dir).unwrap();
    let first = refresh(&root).unwrap();
    assert!(first.from_scratch && first.tagged >= 10);
    // A new file is found by the next update, which writes only the delta.
    std::fs::write(dir.join("app/extra.py"), "def brand_new():\n    pass\n").unwrap();
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "brand_new", None, all())
            .unwrap()
            .symbols
            .total,
        0,
        "new files wait for an update"
    );
    let second = refresh(&root).unwrap();
    assert_eq!((second.tagged, second.unchanged), (1, first.files));
    assert!(dir.join(DELTA_FILE).is_file());
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "brand_new", None, all())
            .unwrap()
            .symbols
            .total,
        1
    );
    // Many changes at once fold the delta into a new main index.
    for i in 0..80 {
        std::fs::write(
            dir.join(format!("app/gen_{i}.py")),
            format!("def generated_{i}():\n    pass\n"),
        )
        .unwrap();
    }
    let third = refresh(&root).unwrap();
    assert_eq!(third.tagged, 80);
    assert!(!dir.join(DELTA_FILE).exists() && dir.join(INDEX_FILE).is_file());
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "generated_79", None, all())
            .unwrap()
            .symbols
            .total,
        1
    );
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "brand_new", None, all())
            .unwrap()
            .symbols
            .total,
        1
    );
    // A corrupt index is rebuilt, not trusted.
    std::fs::write(dir.join(INDEX_FILE), b"garbage").unwrap();
    assert_eq!(
        find_definitions(&Index::open(&root).unwrap(), "get_user", None, all())
            .unwrap()
            .symbols
            .total,
        1
    );
}

/// The kinds `--kind` accepts are exactly those the tags queries produce.
#[test]
fn definition_kinds_match_the_tags_queries() {
    use code_intel::codeintel::DEFINITION_KINDS;
    let dir = crate::support::repo().join("src/codeintel/queries");
    let mut produced = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with(';')) {
            for (at, _) in line.match_indices("@definition.") {
                let kind: String = line[at + "@definition.".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                produced.insert(kind);
            }
        }
    }
    let known: std::collections::BTreeSet<String> =
        DEFINITION_KINDS.iter().map(|k| (*k).to_string()).collect();
    assert_eq!(produced, known);
}

/// Rust items are named as Rust names them, `--kind` selects by those names, and an
/// unknown kind is an error listing the kinds.
#[test]
fn rust_kinds_are_rust_names_and_unknown_kinds_are_refused() {
    let dir = repo("rust-kinds");
    std::fs::write(
        dir.join("lib.rs"),
        "pub struct S;\npub enum E { A }\npub union U { a: u8 }\npub type T = u8;\npub trait Tr { type Item; fn m(&self); }\nimpl Tr for S { type Item = u8; fn m(&self) {} }\npub fn f() {}\nmod inner {}\nconst C: u8 = 1;\nstatic X: u8 = 2;\nmacro_rules! mac { () => {} }\nextern \"C\" { fn c_abs(x: i32) -> i32; }\npub struct P { pub len: usize }\n",
    )
    .unwrap();
    let root = Root::open(&dir).unwrap();
    let index = Index::open(&root).unwrap();
    let kind_of = |name: &str| {
        let a = find_definitions(&index, name, None, all()).unwrap();
        a.symbols
            .items
            .iter()
            .map(|s| s.kind.clone())
            .collect::<Vec<_>>()
    };
    for (name, kind) in [
        ("S", "struct"),
        ("E", "enum"),
        ("U", "union"),
        ("T", "type"),
        ("Tr", "trait"),
        ("f", "fn"),
        ("inner", "mod"),
        ("C", "const"),
        ("X", "static"),
        ("mac", "macro"),
        ("c_abs", "fn"),
        ("Item", "type"),
        ("A", "variant"),
        ("len", "field"),
    ] {
        assert!(
            kind_of(name).contains(&kind.to_string()),
            "{name}: {:?}",
            kind_of(name)
        );
    }
    assert!(
        kind_of("S").contains(&"impl".to_string()),
        "{:?}",
        kind_of("S")
    );
    let structs = find_definitions(&index, "S", Some("struct"), all()).unwrap();
    assert_eq!(structs.symbols.items.len(), 1);
    let e = find_definitions(&index, "S", Some("structure"), all()).unwrap_err();
    assert_eq!(e.key(), "kind.unknown");
    assert!(e.to_string().contains("struct, trait"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A decorator line belongs to the function it decorates, however long the decorator;
/// the signature stays the definition's own line.
#[test]
fn decorator_lines_belong_to_the_decorated_function() {
    let dir = repo("decorators");
    std::fs::write(
        dir.join("m.py"),
        "import functools\n\n\n@functools.lru_cache(\n    maxsize=3,\n)\ndef cached(x):\n    return x\n\n\nclass A:\n    @property\n    def p(self):\n        return 1\n",
    )
    .unwrap();
    let root = Root::open(&dir).unwrap();
    let index = Index::open(&root).unwrap();
    for (line, expected) in [
        (4, "cached"),
        (5, "cached"),
        (7, "cached"),
        (12, "p"),
        (13, "p"),
    ] {
        let f = function_at_line(&root, &index, "m.py", line).unwrap();
        assert_eq!(
            f.function.map(|h| h.name),
            Some(expected.to_string()),
            "line {line}"
        );
    }
    let defs = find_definitions(&index, "cached", None, all()).unwrap();
    assert_eq!(defs.symbols.items[0].line, 7);
    assert_eq!(defs.symbols.items[0].signature, "def cached(x):");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Multi-line imports are shown whole, one entry each, in every language that has them.
#[test]
fn multi_line_imports_are_whole() {
    let dir = repo("imports");
    std::fs::write(
        dir.join("m.py"),
        "from os.path import (\n    join,\n    exists,\n)\nimport sys\n\n\ndef f():\n    return join(sys.argv[0], 'x')\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("m.rs"),
        "use std::collections::{\n    BTreeMap,\n    HashMap,\n};\nuse std::fmt;\n\nfn f() {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("m.ts"),
        "import {\n  a,\n  b,\n} from './x';\n\nexport function f() { return a + b; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("m.go"),
        "package m\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc F() { fmt.Println(os.Args) }\n",
    )
    .unwrap();
    let root = Root::open(&dir).unwrap();
    let index = Index::open(&root).unwrap();
    for (file, expected) in [
        (
            "m.py",
            vec!["from os.path import ( join, exists, )", "import sys"],
        ),
        (
            "m.rs",
            vec![
                "use std::collections::{ BTreeMap, HashMap, };",
                "use std::fmt;",
            ],
        ),
        ("m.ts", vec!["import { a, b, } from './x';"]),
        ("m.go", vec!["import ( \"fmt\" \"os\" )"]),
    ] {
        let s = analyze_structure(&root, &index, file, all()).unwrap();
        assert_eq!(s.files.items[0].imports, expected, "{file}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `code-intel search` prints lines rendered on the walker threads; they must say what
/// the collected matches say, page for page, with and without context.
#[test]
fn search_rendered_text_matches_the_collected_matches() {
    use code_intel::codeintel::search_text_rendered;
    let dir = repo("rendered");
    let root = Root::open(&dir).unwrap();
    for context in [0, 1, 3] {
        for (offset, limit) in [(0, 0), (0, 1), (1, 2), (2, 0), (3, 100), (50, 1)] {
            let q = TextQuery {
                context,
                ..text(&["get_user", "def ", "fn "])
            };
            let window = Window { offset, limit };
            let r = search_text(&root, &q, window).unwrap();
            let mut expected = String::new();
            for f in &r.files {
                for m in &f.matches {
                    let first_before = m.line - m.before.len() as u64;
                    for (i, b) in m.before.iter().enumerate() {
                        expected += &format!("{}-{}-{b}\n", f.path, first_before + i as u64);
                    }
                    expected += &format!("{}:{}:{}\n", f.path, m.line, m.text);
                    for (i, a) in m.after.iter().enumerate() {
                        expected += &format!("{}-{}-{a}\n", f.path, m.line + 1 + i as u64);
                    }
                    if context > 0 {
                        expected += "--\n";
                    }
                }
            }
            let rendered = search_text_rendered(&root, &q, window).unwrap();
            let got: Vec<u8> = rendered.chunks.concat();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                expected,
                "context {context}, window {window:?}"
            );
            assert_eq!(
                (
                    rendered.total,
                    rendered.returned,
                    rendered.truncated,
                    rendered.next_offset
                ),
                (r.total, r.returned, r.truncated, r.next_offset),
                "context {context}, window {window:?}"
            );
            assert!(r.total > 8, "{}", r.total);
        }
    }
}

#[test]
fn the_projects_excluded_globs_are_left_out_of_every_walk() {
    let dir = TempDir::claim(&format!("ci-exclude-{}", std::process::id()));
    for (path, text) in [
        ("src/app.py", "def needle_here():\n    return 1\n"),
        ("vendor/lib.py", "def needle_vendored():\n    return 2\n"),
        ("build/gen.min.js", "function needleMin() {}\n"),
        (
            ".code-intel/config.yml",
            "index:\n  exclude: [\"vendor/**\", \"*.min.js\"]\n",
        ),
    ] {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (code, out, err) = run(&dir, &["search", "needle"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "src/app.py:1:def needle_here():\n");
    let (_, out, _) = run(&dir, &["files", "*"]);
    assert_eq!(out.trim(), "src/app.py");
    let (code, out, err) = run(&dir, &["index", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"], 1, "{v}");
    assert_eq!(v["semantic"]["files"], 1, "{v}");
    let (code, out, _) = run(&dir, &["defs", "needle_vendored"]);
    assert_eq!(
        (code, out.as_str()),
        (Some(1), ""),
        "defined only in excluded files"
    );

    // A config that does not parse is an error at its line, not a silent default.
    std::fs::write(dir.join(".code-intel/config.yml"), "index:\n  exclud: []\n").unwrap();
    let (code, _, err) = run(&dir, &["search", "needle"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("config.yml:2:3") && err.contains("exclud"),
        "{err}"
    );
}
