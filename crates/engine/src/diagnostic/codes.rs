//! The registry of stable diagnostic codes: the single source for severities and `docs/lints.md`.
//!
//! A code names what is flagged, never what to do about it. Codes are stable: tools and
//! CI configurations match on them, so a code is never renamed or reused.

/// How bad a finding is; each code has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One registered code.
#[derive(Debug, Clone, Copy)]
pub struct Code {
    pub code: &'static str,
    pub severity: Severity,
    /// One line: what the code flags.
    pub summary: &'static str,
    /// Which stage reports it: `read`, `yaml`, `schema` or `lint` for contracts,
    /// `scenario` for the scenario files of `code-intel test`.
    pub stage: &'static str,
}

const fn code(
    code: &'static str,
    severity: Severity,
    stage: &'static str,
    summary: &'static str,
) -> Code {
    Code {
        code,
        severity,
        summary,
        stage,
    }
}

use Severity::{Error, Warning};

/// Every code, in the order `docs/lints.md` lists them.
pub const ALL: &[Code] = &[
    code(
        "file-unreadable",
        Error,
        "read",
        "a contract file cannot be read (missing, a dangling link, no permission, not a regular file) or is not UTF-8 text",
    ),
    code("yaml-syntax", Error, "yaml", "the file is not valid YAML"),
    code(
        "yaml-duplicate-key",
        Error,
        "yaml",
        "a mapping repeats a key; YAML loaders would silently keep only one",
    ),
    code(
        "yaml-alias-budget",
        Error,
        "yaml",
        "aliases would expand the file beyond its budget (10 nodes per node written plus 10,000, 10 bytes per byte plus 1 MiB), as a \"billion laughs\" file does",
    ),
    code(
        "yaml-nesting-depth",
        Error,
        "yaml",
        "sequences and mappings are nested more than 128 levels deep",
    ),
    code(
        "schema-violation",
        Error,
        "schema",
        "the file does not match `schemas/contract.schema.json`",
    ),
    code(
        "unknown-transition-target",
        Error,
        "lint",
        "a transition, fallback, limit or initial state names a state that does not exist",
    ),
    code(
        "unreachable-state",
        Warning,
        "lint",
        "no path from the initial state reaches this state",
    ),
    code(
        "dead-end-state",
        Error,
        "lint",
        "a non-terminal state has no `otherwise` fallback, so a submission can match nothing",
    ),
    code(
        "unbounded-cycle",
        Error,
        "lint",
        "a cycle of transitions can repeat forever: no counter with a limit bounds it",
    ),
    code(
        "resource-not-released",
        Error,
        "lint",
        "the flow acquires a resource that no `finally` action releases, so some exit leaks it",
    ),
    code(
        "invalid-cancel-target",
        Error,
        "lint",
        "`on_cancel` leads to a state that is not terminal with outcome `cancelled`",
    ),
    code(
        "guard-syntax-error",
        Error,
        "lint",
        "a guard expression does not parse",
    ),
    code(
        "guard-type-error",
        Error,
        "lint",
        "a guard expression mixes types (compares a string with a number, negates a list, ...)",
    ),
    code(
        "guard-unknown-path",
        Error,
        "lint",
        "a guard reads a payload field, flag, counter, fact or variable that is not declared",
    ),
    code(
        "shadowed-transition",
        Warning,
        "lint",
        "an earlier transition of the same state always matches, so this one never fires",
    ),
    code(
        "unknown-action",
        Error,
        "lint",
        "an action is not in the host's action registry, or its arguments do not fit",
    ),
    code(
        "unknown-tool",
        Error,
        "lint",
        "a tool name is not one the host provides",
    ),
    code(
        "unknown-counter",
        Error,
        "lint",
        "a transition increments or resets a counter that is not declared",
    ),
    code(
        "undefined-message",
        Error,
        "lint",
        "a message key is used but not defined in `messages`",
    ),
    code(
        "unused-message",
        Warning,
        "lint",
        "a message is defined but nothing uses it",
    ),
    code(
        "placeholder-mismatch",
        Error,
        "lint",
        "a message's `{placeholders}` differ between locales or from the values its users provide",
    ),
    code(
        "missing-locale-text",
        Error,
        "lint",
        "a message or instruction lacks the text for a declared locale",
    ),
    code(
        "invalid-payload-schema",
        Error,
        "lint",
        "a state's payload schema is not a valid JSON Schema",
    ),
    code(
        "template-syntax-error",
        Error,
        "lint",
        "an instruction template does not compile, or has a tag too large to compile safely",
    ),
    code(
        "unknown-template-name",
        Error,
        "lint",
        "an instruction template reads a name it is not given, or a flag, param, counter or variable the contract does not declare",
    ),
    code(
        "invalid-flag-reference",
        Error,
        "lint",
        "a flag set, matrix column or conflict names a flag or value that is not declared",
    ),
    code(
        "overlay-unknown-name",
        Warning,
        "lint",
        "an overlay names a state, counter, message, flag, param or variable the contract it extends does not have but nearly has (a typo that would add a new one)",
    ),
    code(
        "scenario-invalid",
        Error,
        "scenario",
        "a scenario file (for `code-intel test`) does not have the shape of the scenario schema",
    ),
];

pub fn find(code: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code == code)
}

/// The registered severity of `code`; unknown codes are errors so they cannot hide.
pub fn severity(code: &str) -> Severity {
    find(code).map_or(Severity::Error, |c| c.severity)
}

/// The long documentation of the rules that have their own file in `lint::rules`: the
/// file's `//!` header, in ruff's "What it does / Why is this bad? / Example" shape.
const RULE_DOCS: &[(&str, &str)] = &[
    (
        "unreachable-state",
        include_str!("../lint/rules/unreachable_state.rs"),
    ),
    (
        "dead-end-state",
        include_str!("../lint/rules/dead_end_state.rs"),
    ),
    (
        "unbounded-cycle",
        include_str!("../lint/rules/unbounded_cycle.rs"),
    ),
    (
        "resource-not-released",
        include_str!("../lint/rules/resource_not_released.rs"),
    ),
    (
        "invalid-cancel-target",
        include_str!("../lint/rules/invalid_cancel_target.rs"),
    ),
    (
        "shadowed-transition",
        include_str!("../lint/rules/shadowed_transition.rs"),
    ),
    (
        "undefined-message",
        include_str!("../lint/rules/undefined_message.rs"),
    ),
    (
        "unused-message",
        include_str!("../lint/rules/unused_message.rs"),
    ),
    (
        "placeholder-mismatch",
        include_str!("../lint/rules/placeholder_mismatch.rs"),
    ),
    (
        "missing-locale-text",
        include_str!("../lint/rules/missing_locale_text.rs"),
    ),
    (
        "unknown-template-name",
        include_str!("../lint/rules/unknown_template_name.rs"),
    ),
];

fn rule_doc(code: &str) -> Option<String> {
    let source = RULE_DOCS.iter().find(|(c, _)| *c == code)?.1;
    let lines: Vec<&str> = source
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            l.strip_prefix("//! ")
                .or_else(|| l.strip_prefix("//!"))
                .unwrap_or(l)
        })
        .skip(1)
        .collect();
    Some(lines.join("\n").trim().replace("## ", "#### "))
}

/// `docs/lints.md`, generated from this registry and the rule files.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Lint codes\n\n<!-- Generated by `UPDATE_GENERATED=1 cargo test` from src/diagnostic/codes.rs and src/lint/rules/; do not edit. -->\n\n\
         `code-intel lint` reads each contract file as UTF-8 text, then checks it in three stages: YAML syntax, the contract schema, then meaning.\n\
         A file that cannot be read is a finding for that file; the other files are still checked.\n\
         Every finding has a stable code. Exit status: 0 clean, 1 findings (`--deny error`: errors only), \
         2 usage or IO error: a file could not be read, or a path holds no contract file (the findings are still printed).\n\n\
         | code | severity | stage | what it flags |\n|---|---|---|---|\n",
    );
    for c in ALL {
        out.push_str(&format!(
            "| [`{0}`](#{0}) | {1} | {2} | {3} |\n",
            c.code,
            c.severity.as_str(),
            c.stage,
            c.summary
        ));
    }
    for c in ALL {
        out.push_str(&format!(
            "\n## {}\n\n{} ({}, reported by the {} stage).\n",
            c.code,
            capitalise(c.summary),
            c.severity.as_str(),
            c.stage
        ));
        if let Some(doc) = rule_doc(c.code) {
            out.push('\n');
            out.push_str(&doc);
            out.push('\n');
        }
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |f| {
        f.to_uppercase().collect::<String>() + chars.as_str()
    })
}
