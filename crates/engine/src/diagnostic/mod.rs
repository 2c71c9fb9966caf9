//! Diagnostics as data: what is wrong, where, and how to fix it.
//!
//! Checks build [`Diagnostic`] values; the renderers in [`render`] turn them into
//! text, JSON, SARIF or GitHub annotations. Nothing here prints.

pub mod codes;
pub mod render;

// The surface: what the binaries, benches and integration tests use from this module.

pub use codes::Severity;

use crate::source::Span;

/// One finding about a contract file.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Stable kebab-case rule code, one of [`codes::ALL`].
    pub code: &'static str,
    pub severity: Severity,
    /// Terse statement of the problem, lowercase, no trailing period.
    pub message: String,
    /// Where the problem is; `None` only for problems with no location (IO errors).
    pub span: Option<Span>,
    /// A suggestion of what to do instead.
    pub help: Option<String>,
    /// Extra facts that explain the finding.
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic with the severity its code is registered with.
    pub fn new(code: &'static str, message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            code,
            severity: codes::severity(code),
            message: message.into(),
            span,
            help: None,
            notes: Vec::new(),
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// Sorts diagnostics by file, position and code so output is deterministic.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        let key = |d: &Diagnostic| d.span.map(|s| (s.file, s.start.line, s.start.col));
        key(a)
            .cmp(&key(b))
            .then_with(|| a.code.cmp(b.code))
            .then_with(|| a.message.cmp(&b.message))
    });
}

pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}
