//! Renderers: diagnostics as human text (rustc style, with a snippet and a caret), JSON,
//! SARIF 2.1.0, and GitHub workflow annotations. Output is deterministic and uncoloured.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use super::{Diagnostic, codes};
use crate::source::Sources;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Github,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "human" => Some(Format::Human),
            "json" => Some(Format::Json),
            "sarif" => Some(Format::Sarif),
            "github" => Some(Format::Github),
            _ => None,
        }
    }
}

/// `Err` only when the JSON or SARIF document cannot be encoded: said, rather than a
/// report of nothing.
pub fn render(
    format: Format,
    sources: &Sources,
    diagnostics: &[Diagnostic],
) -> Result<String, serde_json::Error> {
    match format {
        Format::Human => Ok(human(sources, diagnostics)),
        Format::Json => json(sources, diagnostics),
        Format::Sarif => sarif(sources, diagnostics),
        Format::Github => Ok(github(sources, diagnostics)),
    }
}

/// Terminal cells a character takes: 2 for East Asian wide and full-width characters
/// (and most emoji), 0 for combining marks and zero-width characters, else 1. A table of
/// the main Unicode ranges, enough to keep carets under the right text.
fn display_width(c: char) -> usize {
    let u = u32::from(c);
    let zero = matches!(u, 0x0300..=0x036F | 0x200B..=0x200F | 0xFE00..=0xFE0F | 0x20D0..=0x20FF);
    let wide = matches!(
        u,
        0x1100..=0x115F
            | 0x2E80..=0x303E
            | 0x3041..=0x33FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA000..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFF60
            | 0xFFE0..=0xFFE6
            | 0x1F300..=0x1F64F
            | 0x1F900..=0x1F9FF
            | 0x20000..=0x3FFFD
    );
    if zero {
        0
    } else if wide {
        2
    } else {
        1
    }
}

/// `error[code]: message` / `--> file:line:col` / snippet with carets / help.
pub fn human(sources: &Sources, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let _ = writeln!(out, "{}[{}]: {}", d.severity.as_str(), d.code, d.message);
        if let Some(span) = d.span {
            let _ = writeln!(out, "  --> {}", sources.location(span));
            // A file with no text (one that could not be read) has no snippet to show.
            if let Some(line) = sources
                .get(span.file)
                .filter(|f| !f.text.is_empty())
                .and_then(|f| f.line(span.start.line))
            {
                let number = span.start.line.to_string();
                let pad = " ".repeat(number.len());
                let start = span.start.col.saturating_sub(1) as usize;
                let line_len = line.chars().count();
                let width = if span.end.line == span.start.line && span.end.col > span.start.col {
                    (span.end.col - span.start.col) as usize
                } else {
                    line_len.saturating_sub(start).max(1)
                };
                let width = width.min(line_len.saturating_sub(start).max(1));
                // Columns count characters; a terminal shows wide (CJK, full-width) ones
                // in two cells, so the carets follow display width.
                let indent: String = line
                    .chars()
                    .take(start)
                    .map(|c| match c {
                        '\t' => "\t".to_string(),
                        c => " ".repeat(display_width(c)),
                    })
                    .collect();
                let carets: usize = line
                    .chars()
                    .skip(start)
                    .take(width)
                    .map(display_width)
                    .sum::<usize>()
                    .max(1);
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{number} | {line}");
                let _ = writeln!(out, "{pad} | {indent}{}", "^".repeat(carets));
            }
        }
        for note in &d.notes {
            let _ = writeln!(out, "  = note: {note}");
        }
        if let Some(help) = &d.help {
            let _ = writeln!(out, "  = help: {help}");
        }
        out.push('\n');
    }
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == super::Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    if !diagnostics.is_empty() {
        let _ = writeln!(out, "{errors} error(s), {warnings} warning(s)");
    }
    out
}

/// The JSON wire shape, separate from the in-memory type so it can stay stable.
#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    severity: &'a str,
    message: &'a str,
    file: Option<&'a str>,
    line: Option<u32>,
    column: Option<u32>,
    end_line: Option<u32>,
    end_column: Option<u32>,
    help: Option<&'a str>,
    notes: &'a [String],
}

pub fn json(sources: &Sources, diagnostics: &[Diagnostic]) -> Result<String, serde_json::Error> {
    let items: Vec<JsonDiagnostic<'_>> = diagnostics
        .iter()
        .map(|d| JsonDiagnostic {
            code: d.code,
            severity: d.severity.as_str(),
            message: &d.message,
            file: d.span.map(|s| sources.name(s.file)),
            line: d.span.map(|s| s.start.line),
            column: d.span.map(|s| s.start.col),
            end_line: d.span.map(|s| s.end.line),
            end_column: d.span.map(|s| s.end.col),
            help: d.help.as_deref(),
            notes: &d.notes,
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&json!({ "diagnostics": items }))?;
    s.push('\n');
    Ok(s)
}

pub fn sarif(sources: &Sources, diagnostics: &[Diagnostic]) -> Result<String, serde_json::Error> {
    let rules: Vec<Value> = codes::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.code,
                "shortDescription": {"text": c.summary},
                "helpUri": format!("https://github.com/code-intel/code-intel/blob/main/docs/lints.md#{}", c.code),
                "defaultConfiguration": {"level": level(c.severity)},
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str(&format!(" (help: {h})"));
            }
            let mut result = json!({
                "ruleId": d.code,
                "level": level(d.severity),
                "message": {"text": text},
            });
            // An unregistered code has no rule to point at (`null` is not valid SARIF).
            if let Some(index) = codes::ALL.iter().position(|c| c.code == d.code) {
                result["ruleIndex"] = json!(index);
            }
            if let Some(span) = d.span {
                result["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri_reference(sources.name(span.file))},
                        "region": {
                            "startLine": span.start.line,
                            "startColumn": span.start.col,
                            "endLine": span.end.line,
                            "endColumn": span.end.col,
                        }
                    }
                }]);
            }
            result
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "code-intel", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            // Columns are counted in characters; SARIF's default is UTF-16 code units.
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
}

/// A file name as a SARIF `uri` (an RFC 3986 URI reference): bytes other than unreserved
/// characters, `/` and a few safe delimiters are percent-encoded, so a path with a space,
/// `%`, `#` or non-ASCII text stays a valid reference to the same file.
fn uri_reference(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn level(severity: super::Severity) -> &'static str {
    match severity {
        super::Severity::Error => "error",
        super::Severity::Warning => "warning",
    }
}

/// GitHub workflow commands: `::error file=F,line=L,col=C,title=code::message`.
pub fn github(sources: &Sources, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let mut props = Vec::new();
        if let Some(span) = d.span {
            props.push(format!("file={}", escape_property(sources.name(span.file))));
            props.push(format!("line={}", span.start.line));
            props.push(format!("col={}", span.start.col));
            props.push(format!("endLine={}", span.end.line));
            props.push(format!("endColumn={}", span.end.col));
        }
        props.push(format!("title={}", escape_property(d.code)));
        let mut message = d.message.clone();
        if let Some(h) = &d.help {
            message.push_str(&format!("\nhelp: {h}"));
        }
        let _ = writeln!(
            out,
            "::{} {}::{}",
            d.severity.as_str(),
            props.join(","),
            escape_data(&message)
        );
    }
    out
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Pos, Span};

    #[test]
    fn carets_sit_under_wide_text_by_display_width() {
        let mut sources = Sources::default();
        let file = sources.add("flow.yml", "  label: \"日本語\" then bad\n");
        // `bad` is at character column 20; the three wide characters before it take six
        // cells, so the carets start three cells further right than the column says.
        let d = Diagnostic::new(
            "schema-violation",
            "x",
            Some(Span {
                file,
                start: Pos { line: 1, col: 20 },
                end: Pos { line: 1, col: 23 },
            }),
        );
        let text = human(&sources, std::slice::from_ref(&d));
        let caret_line = text.lines().find(|l| l.contains('^')).unwrap();
        assert_eq!(caret_line, format!("  | {}^^^", " ".repeat(22)), "{text}");
        let wide = Diagnostic::new(
            "schema-violation",
            "x",
            Some(Span {
                file,
                start: Pos { line: 1, col: 11 },
                end: Pos { line: 1, col: 14 },
            }),
        );
        let text = human(&sources, std::slice::from_ref(&wide));
        let caret_line = text.lines().find(|l| l.contains('^')).unwrap();
        // 日本語 itself: three characters, six cells.
        assert_eq!(
            caret_line,
            format!("  | {}^^^^^^", " ".repeat(10)),
            "{text}"
        );
    }

    #[test]
    fn sarif_uris_are_uri_references() {
        assert_eq!(uri_reference("contracts/a_b-c.yml"), "contracts/a_b-c.yml");
        assert_eq!(
            uri_reference("my flows/100%#1:日.yml"),
            "my%20flows/100%25%231%3A%E6%97%A5.yml"
        );
    }

    #[test]
    fn every_format_is_valid_with_nothing_to_report() {
        let sources = Sources::default();
        let sarif: Value = serde_json::from_str(&sarif(&sources, &[]).unwrap()).unwrap();
        assert_eq!(sarif["version"], "2.1.0");
        assert_eq!(sarif["runs"][0]["results"], json!([]));
        assert_eq!(sarif["runs"][0]["columnKind"], "unicodeCodePoints");
        let doc: Value = serde_json::from_str(&json(&sources, &[]).unwrap()).unwrap();
        assert_eq!(doc, json!({"diagnostics": []}));
        assert_eq!(github(&sources, &[]), "");
        assert_eq!(human(&sources, &[]), "");
    }

    #[test]
    fn an_unregistered_code_has_no_rule_index_and_an_empty_file_no_snippet() {
        let mut sources = Sources::default();
        let file = sources.add("gone.yml", "");
        let d = Diagnostic::new(
            "not-a-registered-code",
            "x",
            Some(Span::point(file, Pos::START)),
        );
        let sarif: Value =
            serde_json::from_str(&sarif(&sources, std::slice::from_ref(&d)).unwrap()).unwrap();
        let result = &sarif["runs"][0]["results"][0];
        assert!(result.get("ruleIndex").is_none(), "{result}");
        assert_eq!(result["ruleId"], "not-a-registered-code");
        let text = human(&sources, &[d]);
        assert!(
            text.contains("--> gone.yml:1:1") && !text.contains(" | "),
            "{text}"
        );
    }
}
