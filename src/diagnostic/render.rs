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

pub fn render(format: Format, sources: &Sources, diagnostics: &[Diagnostic]) -> String {
    match format {
        Format::Human => human(sources, diagnostics),
        Format::Json => json(sources, diagnostics),
        Format::Sarif => sarif(sources, diagnostics),
        Format::Github => github(sources, diagnostics),
    }
}

/// `error[code]: message` / `--> file:line:col` / snippet with carets / help.
pub fn human(sources: &Sources, diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let _ = writeln!(out, "{}[{}]: {}", d.severity.as_str(), d.code, d.message);
        if let Some(span) = d.span {
            let _ = writeln!(
                out,
                "  --> {}:{}:{}",
                sources.name(span.file),
                span.start.line,
                span.start.col
            );
            if let Some(line) = sources.get(span.file).and_then(|f| f.line(span.start.line)) {
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
                let indent: String = line
                    .chars()
                    .take(start)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{number} | {line}");
                let _ = writeln!(out, "{pad} | {indent}{}", "^".repeat(width));
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

pub fn json(sources: &Sources, diagnostics: &[Diagnostic]) -> String {
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
    let mut s = serde_json::to_string_pretty(&json!({ "diagnostics": items }))
        .unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

pub fn sarif(sources: &Sources, diagnostics: &[Diagnostic]) -> String {
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
                "ruleIndex": codes::ALL.iter().position(|c| c.code == d.code),
                "level": level(d.severity),
                "message": {"text": text},
            });
            if let Some(span) = d.span {
                result["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": {"uri": sources.name(span.file)},
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
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
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
