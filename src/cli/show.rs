//! `code-intel show`: prints the effective contract (see `analysis::effective`), every
//! value with the file and line it comes from.

use std::process::ExitCode;

use super::error::CliError;
use super::out::outln;
use crate::analysis::effective::{self, EffectiveState};
use crate::contract::model::StateKind;
use crate::contract::{Contract, flags};
use crate::source::{Sources, Span};

fn kind(k: StateKind) -> &'static str {
    match k {
        StateKind::External => "external",
        StateKind::Engine => "engine",
        StateKind::Terminal => "terminal",
    }
}

pub(super) fn run(
    contract: &Contract,
    sources: &Sources,
    flag_text: &str,
    intent: Option<&str>,
    locale: Option<&str>,
    only_state: Option<&str>,
    only_running: bool,
) -> Result<ExitCode, CliError> {
    let flag_set = flags::parse(contract, flag_text).map_err(CliError::Flags)?;
    if let Some(i) = intent
        && !contract.intents.iter().any(|x| x == i)
    {
        return Err(CliError::Usage(format!(
            "unknown intent `{i}`; the contract's intents are: {}",
            contract.intents.join(", ")
        )));
    }
    if let Some(l) = locale
        && !contract.locales.iter().any(|x| x == l)
    {
        return Err(CliError::Usage(format!(
            "unknown locale `{l}`; the contract's locales are: {}",
            contract.locales.join(", ")
        )));
    }
    if let Some(s) = only_state
        && contract.state_id(s).is_none()
    {
        return Err(CliError::Usage(format!(
            "unknown state `{s}`; the contract's states are: {}",
            contract
                .states
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let e = effective::compute(contract, &flag_set, intent, locale)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let set: Vec<String> = e
        .flags
        .iter()
        .filter(|(name, value)| contract.flag(name).is_some_and(|f| &f.default != *value))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    outln!(
        "contract {} — intent {}, locale {}, flags: {}",
        contract.name,
        e.intent,
        e.locale,
        if set.is_empty() {
            "none set".to_string()
        } else {
            set.join(", ")
        }
    );
    for s in &e.states {
        if only_state.is_some_and(|o| o != s.id) || (only_running && !s.runs) {
            continue;
        }
        print_state(sources, s);
    }
    if only_state.is_none() && !e.counters.is_empty() {
        outln!("\ncounters:");
        for c in &e.counters {
            outln!(
                "  {}: limit {} (from {}); on the limit -> {}",
                c.name,
                c.limit,
                sources.location(c.limit_origin),
                if c.redirects.is_empty() {
                    "nothing".to_string()
                } else {
                    c.redirects.join(", then ")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_state(sources: &Sources, s: &EffectiveState) {
    let step = s.step.map(|n| format!("step {n}, ")).unwrap_or_default();
    outln!(
        "\n## {} ({step}{}{}) — {}",
        s.id,
        kind(s.kind),
        if s.runs {
            ""
        } else {
            ", does not run under these flags"
        },
        sources.location(s.origin)
    );
    if let (Some(text), Some(from)) = (&s.instruction, s.instruction_origin) {
        outln!("instruction (from {}):", sources.location(from));
        for line in text.trim_end().lines() {
            outln!("  | {line}");
        }
    }
    let from = |span: Option<Span>| {
        span.map(|s| format!(" (from {})", sources.location(s)))
            .unwrap_or_default()
    };
    if s.kind == StateKind::External {
        outln!(
            "allowed tools: {}{}",
            if s.allowed_tools.is_empty() {
                "any".to_string()
            } else {
                s.allowed_tools.join(", ")
            },
            from(s.allowed_tools_origin)
        );
        if !s.required_tools.is_empty() || s.min_distinct_tools > 0 {
            outln!(
                "required tools: {}{}",
                if s.required_tools.is_empty() {
                    "none by name".to_string()
                } else {
                    s.required_tools.join(", ")
                },
                if s.min_distinct_tools > 0 {
                    format!(" (at least {} distinct)", s.min_distinct_tools)
                } else {
                    String::new()
                },
            );
            if let Some(span) = s.required_tools_origin {
                outln!("  (required tools from {})", sources.location(span));
            }
        }
        outln!("payload: {}{}", s.expected_payload, from(s.payload_origin));
    }
    for t in &s.transitions {
        let when = match &t.guard {
            Some(g) => format!("when {g}"),
            None => "otherwise".to_string(),
        };
        let decided = match t.decided {
            Some(true) => " [always, under these flags]",
            Some(false) => " [never, under these flags]",
            None => "",
        };
        outln!(
            "  -> {} {when}{decided} — {}",
            t.to,
            sources.location(t.origin)
        );
    }
}
