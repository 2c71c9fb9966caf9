//! Semantic lint rules over a resolved contract: one rule per file in [`rules`].
//!
//! Rules that need name resolution run during lowering (`contract::lower`); the rules here
//! look at the whole flow: reachability, cycles, shadowing and the message catalogue.
//!
//! Whole-flow rules over a resolved contract (`lint::check`; `load_and_lint` loads and
//! checks; `lint::for_repository` answers "which contract does this repository run", its
//! overlay or the built-in flow, loaded for the hosts given: `serve` and `init` pass the
//! code-intel registry alone, so a contract for another host is refused as it loads), one file per rule in `lint/rules/` with the
//! `## What it does / ## Why is this bad? / ## Example` doc: `unreachable-state`,
//! `dead-end-state`, `unbounded-cycle`, `shadowed-transition`, `undefined-message`,
//! `unused-message`, `placeholder-mismatch`, `missing-locale-text`, `unknown-template-name`
//! (the names templates read, against `contract::template_roots`; bounded on hostile
//! templates: minijinja's attribute tracking only where chains are short, "did you mean"
//! and exact places for a fixed number of findings). `lint::usage` collects
//! where each message key is used and which placeholders each use provides. Checks that need
//! name resolution (unknown targets, counters, actions, tools, guard errors) are reported by
//! `contract::lower` with the same codes. Rules do not restate what lowering reported: the
//! model records an unresolved `initial` (`Contract::initial_known`) and an `otherwise`
//! lowering dropped (`State::fallback_dropped`).

pub mod repository;
pub(crate) mod rules;
pub(crate) mod usage;

use crate::contract::{self, Contract, Loaded, Registry};
use crate::diagnostic::{self, Diagnostic};
use crate::source::{FileId, Pos, Sources, Span};

/// Loads a contract ([`contract::load`]) and runs the whole-flow rules on it: what `lint`,
/// diagrams and hosts use before trusting a contract.
pub fn load_and_lint(sources: &mut Sources, file: FileId, hosts: &[Registry]) -> Loaded {
    let mut loaded = contract::load(sources, file, hosts);
    add_findings(&mut loaded);
    loaded
}

/// [`load_and_lint`] for a file given as bytes, as read from disk: text that is not UTF-8
/// is one `file-unreadable` finding (see [`decode`]) and nothing else is checked.
pub fn load_bytes_and_lint(
    sources: &mut Sources,
    name: impl Into<String>,
    bytes: Vec<u8>,
    hosts: &[Registry],
) -> Loaded {
    let name = name.into();
    match decode(sources, &name, bytes) {
        Ok(text) => {
            let file = sources.add(name, text);
            load_and_lint(sources, file, hosts)
        }
        Err(d) => Loaded {
            contract: None,
            diagnostics: vec![d],
        },
    }
}

/// Decodes a contract file's bytes as UTF-8. A file that is not UTF-8 (Latin-1, UTF-16,
/// a binary file) is added to `sources` with U+FFFD for the bytes that are not, so the
/// finding can show its line, and becomes a `file-unreadable` diagnostic at the first
/// such byte.
pub fn decode(sources: &mut Sources, name: &str, bytes: Vec<u8>) -> Result<String, Diagnostic> {
    let error = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e,
    };
    let utf8 = error.utf8_error();
    let bytes = error.into_bytes();
    let valid = &bytes[..utf8.valid_up_to()];
    let bad = bytes.get(utf8.valid_up_to()).copied().unwrap_or_default();
    // The valid prefix decodes as is, so the position counts characters like every span.
    let prefix = String::from_utf8_lossy(valid);
    let line_start = prefix.rfind('\n').map_or(0, |i| i + 1);
    let pos = Pos {
        line: u32::try_from(prefix.matches('\n').count() + 1).unwrap_or(u32::MAX),
        col: u32::try_from(prefix[line_start..].chars().count() + 1).unwrap_or(u32::MAX),
    };
    let message = match utf8.error_len() {
        Some(_) => format!("the file is not UTF-8 text: byte 0x{bad:02X} is not valid here"),
        None => "the file is not UTF-8 text: it ends in the middle of a character".to_string(),
    };
    let file = sources.add(name, String::from_utf8_lossy(&bytes).into_owned());
    Err(
        Diagnostic::new("file-unreadable", message, Some(Span::point(file, pos)))
            .with_help("save the file as UTF-8; contracts are UTF-8 text"),
    )
}

/// [`contract::load_layered`] followed by the whole-flow rules.
pub fn load_layered_and_lint(
    sources: &mut Sources,
    project: Option<(String, String)>,
    hosts: &[Registry],
) -> Loaded {
    let mut loaded = contract::load_layered(sources, project, hosts);
    add_findings(&mut loaded);
    loaded
}

/// Adds the whole-flow findings to what loading found, in file and position order.
pub(crate) fn add_findings(loaded: &mut Loaded) {
    if let Some(c) = &loaded.contract {
        loaded.diagnostics.extend(check(c));
        diagnostic::sort(&mut loaded.diagnostics);
    }
}

/// Runs every rule and returns the findings in rule order.
pub fn check(contract: &Contract) -> Vec<Diagnostic> {
    let usages = usage::collect(contract);
    let mut out = Vec::new();
    out.extend(rules::unreachable_state::check(contract));
    out.extend(rules::dead_end_state::check(contract));
    out.extend(rules::unbounded_cycle::check(contract));
    out.extend(rules::resource_not_released::check(contract));
    out.extend(rules::invalid_cancel_target::check(contract));
    out.extend(rules::shadowed_transition::check(contract));
    out.extend(rules::undefined_message::check(contract, &usages));
    out.extend(rules::unused_message::check(contract, &usages));
    out.extend(rules::placeholder_mismatch::check(contract, &usages));
    out.extend(rules::missing_locale_text::check(contract));
    out.extend(rules::unknown_template_name::check(contract));
    out.extend(matrix_columns(contract));
    out
}

/// `invalid-flag-reference` for matrix columns: their flags must parse and their intent
/// must exist, so `code-intel matrix` cannot fail on a contract that lints clean.
fn matrix_columns(contract: &Contract) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for c in &contract.matrix_columns {
        if let Err(e) = crate::contract::flags::parse(contract, &c.flags) {
            out.push(Diagnostic::new(
                "invalid-flag-reference",
                format!("matrix column `{}`: {e}", c.key),
                Some(c.span),
            ));
        }
        if let Some(intent) = &c.intent
            && !contract.intents.contains(intent)
        {
            out.push(
                Diagnostic::new(
                    "invalid-flag-reference",
                    format!("matrix column `{}` names unknown intent `{intent}`", c.key),
                    Some(c.span),
                )
                .with_help(format!("intents: {}", contract.intents.join(", "))),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_error(bytes: &[u8]) -> (Diagnostic, Sources) {
        let mut sources = Sources::default();
        let d = decode(&mut sources, "f.yml", bytes.to_vec()).expect_err("not UTF-8");
        (d, sources)
    }

    #[test]
    fn text_that_is_not_utf8_is_found_at_its_first_bad_byte() {
        let mut sources = Sources::default();
        assert_eq!(
            decode(&mut sources, "ok.yml", "a: 日本\n".into()).as_deref(),
            Ok("a: 日本\n")
        );
        // After multibyte text, the column still counts characters.
        let (d, sources) = decode_error(b"a: 1\nb: \xe6\x97\xa5\xff\n");
        assert_eq!(d.code, "file-unreadable");
        let span = d.span.unwrap();
        assert_eq!((span.start.line, span.start.col), (2, 5));
        assert!(d.message.contains("byte 0xFF"), "{}", d.message);
        assert_eq!(
            sources.get(span.file).unwrap().line(2),
            Some("b: 日\u{fffd}")
        );
        // A file cut inside a character.
        let (d, _) = decode_error(b"name: \xe6\x97");
        assert!(d.message.contains("in the middle of a character"));
        assert_eq!(d.span.unwrap().start.col, 7);
        // UTF-16 (with its byte order mark) is not UTF-8 either.
        let (d, _) = decode_error(b"\xff\xfea\x00");
        assert_eq!(d.span.unwrap().start, Pos::START);
    }
}
