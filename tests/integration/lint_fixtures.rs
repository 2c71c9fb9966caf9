//! Lint fixtures with inline expectations: `tests/fixtures/lint/<code>.yml`.
//!
//! Each fixture is a small contract that triggers one code. Every diagnostic it must
//! produce is written as a comment on a line below the offending line, with the first
//! caret at the reported column, or `# <- code` for column 1:
//!
//! ```yaml
//!   B: {kind: engine, otherwise: {to: NOPE}}
//! #                                  ^^^^ unknown-transition-target
//! ```
//!
//! Several annotation lines may follow one line; they all refer to the nearest line above
//! that is not an annotation. The fixtures are checked in-process (exactly the expected
//! diagnostics, no more) and through the binary in every output format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Output;

use code_intel::diagnostic::{Severity, codes, render};
use code_intel::source::Sources;
use serde_json::Value;

use crate::support;

/// Where the fixtures are, relative to the repository root.
const DIR: &str = "tests/fixtures/lint";
/// The fixture that must produce nothing.
const CLEAN: &str = "clean";

/// One diagnostic a fixture expects, or one a run reported.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Expected {
    line: u32,
    col: u32,
    code: String,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} {}", self.line, self.col, self.code)
    }
}

struct Fixture {
    /// The file name without `.yml`: a code, or `clean`.
    name: String,
    /// Repository-relative, as diagnostics and the binary name it.
    path: String,
    /// The file as stored; `text` is the same decoded, with U+FFFD for bytes that are not
    /// UTF-8.
    bytes: Vec<u8>,
    text: String,
    expected: Vec<Expected>,
}

/// Reads the expectations written in a fixture's comments.
fn parse_expectations(text: &str) -> Result<Vec<Expected>, String> {
    let mut out = Vec::new();
    let mut target: Option<u32> = None;
    for (index, line) in text.lines().enumerate() {
        let number = u32::try_from(index + 1).map_err(|e| e.to_string())?;
        let trimmed = line.trim_start();
        let annotation = trimmed.strip_prefix('#').and_then(|rest| {
            let rest = rest.trim_start();
            if let Some(code) = rest.strip_prefix("<-") {
                Some((1, code))
            } else if rest.starts_with('^') {
                let col = line.chars().position(|c| c == '^')? + 1;
                Some((u32::try_from(col).ok()?, rest.trim_start_matches('^')))
            } else {
                None
            }
        });
        let Some((col, rest)) = annotation else {
            target = Some(number);
            continue;
        };
        let Some(line_number) = target else {
            return Err(format!(
                "line {number}: an annotation needs a line above it"
            ));
        };
        let code = rest.split_whitespace().next().unwrap_or_default();
        if code.is_empty() {
            return Err(format!("line {number}: the annotation names no code"));
        }
        out.push(Expected {
            line: line_number,
            col,
            code: code.to_string(),
        });
    }
    out.sort();
    Ok(out)
}

fn fixtures() -> Vec<Fixture> {
    let dir = support::repo().join(DIR);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|file| {
            let Some(name) = file.strip_suffix(".yml") else {
                panic!("{DIR}/{file}: fixtures are `<code>.yml` files");
            };
            let path = format!("{DIR}/{file}");
            let bytes = std::fs::read(support::repo().join(&path)).unwrap();
            // `file-unreadable.yml` is not UTF-8; its comments still are.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let expected = parse_expectations(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
            Fixture {
                name: name.to_string(),
                path,
                bytes,
                text,
                expected,
            }
        })
        .collect()
}

/// `None` when both sides hold the same diagnostics (as multisets), else a readable diff.
/// `details` adds context (a message) to each reported item by position.
fn diff(expected: &[Expected], actual: &[Expected], details: &[String]) -> Option<String> {
    let mut count: BTreeMap<&Expected, i64> = BTreeMap::new();
    for e in expected {
        *count.entry(e).or_default() += 1;
    }
    for a in actual {
        *count.entry(a).or_default() -= 1;
    }
    if count.values().all(|n| *n == 0) {
        return None;
    }
    let mut out = String::new();
    let _ = writeln!(out, "  expected but not reported:");
    for (e, n) in &count {
        for _ in 0..*n {
            let _ = writeln!(out, "    - {e}");
        }
    }
    let _ = writeln!(out, "  reported but not expected:");
    let mut unexpected: BTreeMap<&Expected, i64> = count
        .iter()
        .filter(|(_, n)| **n < 0)
        .map(|(e, n)| (*e, -n))
        .collect();
    for (i, a) in actual.iter().enumerate() {
        if let Some(n) = unexpected.get_mut(a).filter(|n| **n > 0) {
            *n -= 1;
            let detail = details.get(i).map_or("", String::as_str);
            let _ = writeln!(out, "    + {a}  {detail}");
        }
    }
    let _ = writeln!(out, "  expected (all):");
    for e in expected {
        let _ = writeln!(out, "      {e}");
    }
    let _ = writeln!(out, "  reported (all):");
    let mut all: Vec<&Expected> = actual.iter().collect();
    all.sort();
    for a in all {
        let _ = writeln!(out, "      {a}");
    }
    Some(out)
}

fn fail_if_any(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} fixture check(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn expectation_parser_reads_carets_and_arrows() {
    let text = "\
a: 1
#  ^ first-code
#    ^^ second-code and a remark
# a plain comment
b:
# <- third-code
";
    let parsed = parse_expectations(text).unwrap();
    let expect = |line, col, code: &str| Expected {
        line,
        col,
        code: code.to_string(),
    };
    assert_eq!(
        parsed,
        vec![
            expect(1, 4, "first-code"),
            expect(1, 6, "second-code"),
            expect(5, 1, "third-code"),
        ]
    );
    assert!(parse_expectations("# <- code\n").is_err());
    assert!(parse_expectations("a: 1\n#  ^^^\n").is_err());
    // Columns count characters, like the linter's.
    let parsed = parse_expectations("x: \"日本\"\n#    ^^ code\n").unwrap();
    assert_eq!(parsed, vec![expect(1, 6, "code")]);
}

#[test]
fn fixtures_report_exactly_their_expectations() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let mut sources = Sources::default();
        let loaded = code_intel::lint::load_bytes_and_lint(
            &mut sources,
            f.path.clone(),
            f.bytes.clone(),
            &code_intel::hosts::all(),
        );
        let actual: Vec<Expected> = loaded
            .diagnostics
            .iter()
            .map(|d| Expected {
                line: d.span.map_or(0, |s| s.start.line),
                col: d.span.map_or(0, |s| s.start.col),
                code: d.code.to_string(),
            })
            .collect();
        let details: Vec<String> = loaded
            .diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect();
        if let Some(d) = diff(&f.expected, &actual, &details) {
            failures.push(format!(
                "{}:\n{d}  as rendered:\n{}",
                f.path,
                render::human(&sources, &loaded.diagnostics)
            ));
        }
    }
    fail_if_any(&failures);
}

#[test]
fn every_code_has_a_fixture_and_every_fixture_a_code() {
    let fixtures = fixtures();
    let mut failures = Vec::new();
    // Scenario files are not contracts: their code is checked by
    // `cli::scenario_tests_report_failures_at_their_step_and_coverage`.
    for code in codes::ALL.iter().filter(|c| c.stage != "scenario") {
        match fixtures.iter().find(|f| f.name == code.code) {
            None => failures.push(format!(
                "{}: no fixture `{DIR}/{}.yml`",
                code.code, code.code
            )),
            Some(f) if !f.expected.iter().any(|e| e.code == code.code) => {
                failures.push(format!(
                    "{}: its fixture expects no `{}`",
                    f.path, code.code
                ));
            }
            Some(_) => {}
        }
    }
    for f in &fixtures {
        if f.name != CLEAN && codes::find(&f.name).is_none() {
            failures.push(format!("{}: `{}` is not a registered code", f.path, f.name));
        }
        if f.name == CLEAN && !f.expected.is_empty() {
            failures.push(format!("{}: the clean fixture expects findings", f.path));
        }
        for e in &f.expected {
            if codes::find(&e.code).is_none() {
                failures.push(format!("{}: expects unknown code `{}`", f.path, e.code));
            }
        }
        if !f.text.starts_with('#') {
            failures.push(format!(
                "{}: start with a comment saying what it shows",
                f.path
            ));
        }
    }
    assert!(
        fixtures.iter().any(|f| f.name == CLEAN),
        "{DIR}/{CLEAN}.yml is missing"
    );
    fail_if_any(&failures);
}

fn lint(args: &[&str]) -> Output {
    crate::support::code_intel()
        .arg("lint")
        .args(args)
        .current_dir(support::repo())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", support::binary().display()))
}

/// Runs the binary on every fixture in `format`, checks the exit status, and checks the
/// output with `check`, which returns the (line, col, code) it found and a description
/// of anything malformed.
fn check_format(format: &str, check: impl Fn(&Fixture, &str) -> Result<Vec<Expected>, String>) {
    let mut failures = Vec::new();
    for f in fixtures() {
        let out = lint(&[f.path.as_str(), "--format", format]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        // A file that could not be read was not checked: that is status 2, not 1.
        let want_status = if f.expected.iter().any(|e| e.code == "file-unreadable") {
            2
        } else {
            i32::from(!f.expected.is_empty())
        };
        if out.status.code() != Some(want_status) {
            failures.push(format!(
                "{} ({format}): exit status {:?}, expected {want_status}\nstderr: {}",
                f.path,
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        match check(&f, &stdout) {
            Err(e) => failures.push(format!("{} ({format}): {e}\noutput:\n{stdout}", f.path)),
            Ok(actual) => {
                if let Some(d) = diff(&f.expected, &actual, &[]) {
                    failures.push(format!("{} ({format}):\n{d}  output:\n{stdout}", f.path));
                }
            }
        }
    }
    fail_if_any(&failures);
}

fn severity(code: &str) -> &'static str {
    codes::severity(code).as_str()
}

#[test]
fn binary_human_output() {
    check_format("human", |f, out| {
        // Every expectation appears as `[code]` and `path:line:col` ...
        for e in &f.expected {
            let location = format!("{}:{}:{}", f.path, e.line, e.col);
            if !out.contains(&format!("[{}]", e.code)) || !out.contains(&location) {
                return Err(format!("`[{}]` or `{location}` is missing", e.code));
            }
        }
        // ... and each `severity[code]: message` header is followed by its location.
        let mut found = Vec::new();
        let mut lines = out.lines();
        while let Some(line) = lines.next() {
            let header = ["error", "warning"].into_iter().find_map(|sev| {
                let rest = line.strip_prefix(sev)?.strip_prefix('[')?;
                Some((sev, rest.split_once("]: ")?.0))
            });
            let Some((sev, code)) = header else {
                continue;
            };
            if sev != severity(code) {
                return Err(format!("`{code}` is shown as {sev}"));
            }
            let arrow = lines.next().unwrap_or_default();
            let location = arrow
                .trim_start()
                .strip_prefix("--> ")
                .and_then(|l| l.strip_prefix(&format!("{}:", f.path)))
                .ok_or_else(|| format!("no `--> {}:line:col` after `{line}`", f.path))?;
            let (l, c) = location
                .split_once(':')
                .ok_or_else(|| format!("bad location `{arrow}`"))?;
            found.push(Expected {
                line: l.parse().map_err(|_| format!("bad line in `{arrow}`"))?,
                col: c.parse().map_err(|_| format!("bad column in `{arrow}`"))?,
                code: code.to_string(),
            });
        }
        let errors = f
            .expected
            .iter()
            .filter(|e| codes::severity(&e.code) == Severity::Error)
            .count();
        let summary = format!(
            "{errors} error(s), {} warning(s)",
            f.expected.len() - errors
        );
        if f.expected.is_empty() {
            if !out.trim().is_empty() {
                return Err("a clean file prints nothing".into());
            }
        } else if !out.contains(&summary) {
            return Err(format!("the summary `{summary}` is missing"));
        }
        Ok(found)
    });
}

#[test]
fn binary_json_output() {
    check_format("json", |f, out| {
        let doc: Value = serde_json::from_str(out).map_err(|e| format!("not JSON: {e}"))?;
        let items = doc["diagnostics"]
            .as_array()
            .ok_or("no `diagnostics` array")?;
        items
            .iter()
            .map(|d| {
                let code = d["code"].as_str().ok_or("a diagnostic has no `code`")?;
                if d["file"].as_str() != Some(f.path.as_str()) {
                    return Err(format!("`{code}` names file {}", d["file"]));
                }
                if d["severity"].as_str() != Some(severity(code)) {
                    return Err(format!("`{code}` has severity {}", d["severity"]));
                }
                let number = |key: &str| {
                    d[key]
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| format!("`{code}` has no `{key}`"))
                };
                Ok(Expected {
                    line: number("line")?,
                    col: number("column")?,
                    code: code.to_string(),
                })
            })
            .collect()
    });
}

#[test]
fn binary_sarif_output() {
    check_format("sarif", |f, out| {
        let doc: Value = serde_json::from_str(out).map_err(|e| format!("not JSON: {e}"))?;
        if doc["version"] != "2.1.0" {
            return Err(format!("version is {}", doc["version"]));
        }
        let run = &doc["runs"][0];
        let rules = run["tool"]["driver"]["rules"]
            .as_array()
            .ok_or("no rules")?;
        let results = run["results"].as_array().ok_or("no `results` array")?;
        results
            .iter()
            .map(|r| {
                let code = r["ruleId"].as_str().ok_or("a result has no `ruleId`")?;
                let index = r["ruleIndex"]
                    .as_u64()
                    .ok_or("a result has no `ruleIndex`")?;
                let rule = usize::try_from(index).ok().and_then(|i| rules.get(i));
                if rule.map(|rule| &rule["id"]) != Some(&Value::from(code)) {
                    return Err(format!("`{code}` has ruleIndex {index} of another rule"));
                }
                if r["level"].as_str() != Some(severity(code)) {
                    return Err(format!("`{code}` has level {}", r["level"]));
                }
                let location = &r["locations"][0]["physicalLocation"];
                if location["artifactLocation"]["uri"].as_str() != Some(f.path.as_str()) {
                    return Err(format!(
                        "`{code}` has uri {}",
                        location["artifactLocation"]["uri"]
                    ));
                }
                let region = &location["region"];
                let number = |key: &str| {
                    region[key]
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| format!("`{code}` has no region `{key}`"))
                };
                Ok(Expected {
                    line: number("startLine")?,
                    col: number("startColumn")?,
                    code: code.to_string(),
                })
            })
            .collect()
    });
}

#[test]
fn binary_github_output() {
    check_format("github", |f, out| {
        out.lines()
            .map(|line| {
                let (level, rest) = line
                    .strip_prefix("::error ")
                    .map(|r| ("error", r))
                    .or_else(|| line.strip_prefix("::warning ").map(|r| ("warning", r)))
                    .ok_or_else(|| format!("`{line}` is not an ::error or ::warning command"))?;
                let (props, _message) = rest
                    .split_once("::")
                    .ok_or_else(|| format!("`{line}` has no message"))?;
                let props: BTreeMap<&str, &str> =
                    props.split(',').filter_map(|p| p.split_once('=')).collect();
                let get = |key: &str| {
                    props
                        .get(key)
                        .copied()
                        .ok_or_else(|| format!("`{line}` has no `{key}=`"))
                };
                let code = get("title")?;
                if level != severity(code) {
                    return Err(format!("`{code}` is reported as {level}"));
                }
                if get("file")? != f.path {
                    return Err(format!("`{line}` names another file"));
                }
                let number = |key: &str| {
                    get(key)?
                        .parse::<u32>()
                        .map_err(|_| format!("`{line}`: `{key}=` is not a number"))
                };
                Ok(Expected {
                    line: number("line")?,
                    col: number("col")?,
                    code: code.to_string(),
                })
            })
            .collect()
    });
}

/// A path that cannot be read is a `file-unreadable` finding naming it, in every format,
/// and the exit status is 2 (an IO error), not 1.
#[test]
fn binary_exits_2_for_a_missing_path() {
    let missing = format!("{DIR}/no-such-fixture.yml");
    assert!(!Path::new(&support::repo().join(&missing)).exists());
    for format in ["human", "json", "sarif", "github"] {
        let out = lint(&[missing.as_str(), "--format", format]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{format}: stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("no-such-fixture.yml") && stdout.contains("file-unreadable"),
            "{format}: the finding names the path: {stdout}"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("(1 could not be read)"),
            "{format}: the summary says so"
        );
    }
}
