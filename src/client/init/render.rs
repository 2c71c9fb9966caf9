//! The files init owns, rendered from the templates in `templates/` (embedded in the
//! binary). The `/code` command and the Codex skill take their flag table and phase list
//! from the loaded contract, so they cannot drift from the flow the server runs.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, Value, context};
use serde::Serialize;

use super::merge::hook_command;
use super::report::{InitError, Options};
use super::rules::Rule;
use crate::contract::Contract;
use crate::contract::model::{FlagType, StateKind};

/// Templates by name; prompts are plain Markdown, one file per locale.
const TEMPLATES: [(&str, &str); 7] = [
    (
        "flow.en.md",
        include_str!("../../../templates/shared/flow.en.md.j2"),
    ),
    (
        "flow.ja.md",
        include_str!("../../../templates/shared/flow.ja.md.j2"),
    ),
    (
        "claude/code.md",
        include_str!("../../../templates/claude/code.md.j2"),
    ),
    (
        "codex/SKILL.md",
        include_str!("../../../templates/codex/SKILL.md.j2"),
    ),
    (
        "codex/config.toml",
        include_str!("../../../templates/codex/config.toml.j2"),
    ),
    (
        "config.yml",
        include_str!("../../../templates/code-intel/config.yml.j2"),
    ),
    (
        "context.yml",
        include_str!("../../../templates/code-intel/context.yml.j2"),
    ),
];

macro_rules! prompt {
    ($path:literal) => {
        (
            $path,
            include_str!(concat!("../../../templates/prompts/en/", $path)),
            include_str!(concat!("../../../templates/prompts/ja/", $path)),
        )
    };
}

/// `(path under .code-intel/, English, Japanese)`: the files the contract's instructions
/// send agents to.
const PROMPTS: [(&str, &str, &str); 10] = [
    prompt!("doc_research/default.md"),
    prompt!("verifiers/code.md"),
    prompt!("verifiers/tests.md"),
    prompt!("interventions/structure_review.md"),
    prompt!("interventions/hypothesis_review.md"),
    prompt!("interventions/step_back.md"),
    prompt!("review_prompts/garbage_detection.md"),
    prompt!("review_prompts/quality_review.md"),
    prompt!("task_planning.md"),
    prompt!("user_escalation.md"),
];

/// Globs of the documents the research step reads; also what `context.yml` lists.
const DOCUMENT_GLOBS: [&str; 2] = ["docs/**/*.md", "*.md"];

#[derive(Serialize)]
struct FlagRow {
    long: String,
    short: Option<String>,
    aliases: Vec<String>,
    /// `--gate=auto|full` for enums, `--fast` for switches.
    usage: String,
    abbreviations: Vec<String>,
    /// What the flag does, in the locale init writes for.
    help: String,
}

#[derive(Serialize)]
struct PhaseRow {
    step: Option<u32>,
    state: String,
    label: String,
}

/// Every file init owns, as `(repository-relative path, content)`.
pub(super) fn owned_files(
    contract: &Contract,
    options: &Options,
    rules: &[Rule],
) -> Result<Vec<(String, String)>, InitError> {
    let env = environment()?;
    let flow = flow_context(contract, &options.locale);
    let mut files = vec![
        (
            ".code-intel/config.yml".to_string(),
            render(&env, "config.yml", context! { locale => &options.locale })?,
        ),
        (
            ".code-intel/context.yml".to_string(),
            render(
                &env,
                "context.yml",
                context! {
                    rules => Value::from(Serde(rules)),
                    prompts => [".code-intel/doc_research/default.md"],
                    document_globs => DOCUMENT_GLOBS,
                },
            )?,
        ),
    ];
    let japanese = options.locale == "ja";
    for (path, en, ja) in PROMPTS {
        let text = if japanese { ja } else { en };
        files.push((format!(".code-intel/{path}"), text.to_string()));
    }
    files.push((
        ".claude/commands/code.md".to_string(),
        render(
            &env,
            "claude/code.md",
            context! { client => "claude", ..flow.clone() },
        )?,
    ));
    files.push((
        ".codex/skills/code/SKILL.md".to_string(),
        render(
            &env,
            "codex/SKILL.md",
            context! { client => "codex", ..flow },
        )?,
    ));
    Ok(files)
}

/// Init's block in `.codex/config.toml`.
pub(super) fn codex_block(command: &str) -> Result<String, InitError> {
    let env = environment()?;
    render(
        &env,
        "codex/config.toml",
        context! { command => command, hook => hook_command(command, "codex") },
    )
}

/// What the command and the skill are generated from.
fn flow_context(contract: &Contract, locale: &str) -> Value {
    let fallback = contract.default_locale();
    let flags: Vec<FlagRow> = contract
        .flags
        .iter()
        .map(|f| FlagRow {
            long: f.long.clone(),
            short: f.short.clone(),
            aliases: f.aliases.clone(),
            usage: match f.kind {
                FlagType::Bool => format!("--{}", f.long),
                FlagType::Enum => format!("--{}={}", f.long, f.values.join("|")),
            },
            abbreviations: f
                .abbreviations
                .iter()
                .map(|(short, full)| format!("{short}={full}"))
                .collect(),
            help: f.help.get(locale, fallback).to_string(),
        })
        .collect();
    let phases: Vec<PhaseRow> = contract
        .states_in_flow_order()
        .into_iter()
        .map(|id| contract.state(id))
        // The states an agent works through, and the numbered engine ones (the first
        // step, where `start_session` routes the session).
        .filter(|s| s.kind == StateKind::External || s.step.is_some())
        .map(|s| PhaseRow {
            step: s.step,
            state: s.id.clone(),
            // `PHASE (substep)`, from the contract's phase and substep, in the words the
            // tools use; the free-text label otherwise.
            label: match &s.substep {
                Some(substep) => format!("{} ({substep})", s.phase),
                None => s.label.clone(),
            },
        })
        .collect();
    let last_step = contract.states.iter().filter_map(|s| s.step).max();
    // The command's own prose, in the locale when there is a translation of it (a
    // project's contract may add locales), else in English.
    let flow = format!("flow.{locale}.md");
    let flow = if TEMPLATES.iter().any(|(name, _)| *name == flow) {
        flow
    } else {
        "flow.en.md".to_string()
    };
    context! {
        flow => flow,
        locale => locale,
        flags => Value::from(Serde(&flags)),
        phases => Value::from(Serde(&phases)),
        last_step => last_step,
        intents => &contract.intents,
        default_intent => &contract.default_intent,
        submit => contract.call.as_deref().unwrap_or("submit_phase"),
        document_globs => DOCUMENT_GLOBS,
    }
}

fn environment() -> Result<Environment<'static>, InitError> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| template_error("syntax", &e))?;
    env.set_syntax(syntax);
    // Nothing here is HTML; the output must be exactly the text.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    // Markdown table cells: a `|` would end the cell, a newline the row.
    env.add_filter("cell", |s: String| s.replace('|', "\\|").replace('\n', " "));
    // A JSON string is also a valid YAML double-quoted scalar and TOML basic string.
    env.add_filter("quoted", |s: String| {
        serde_json::to_string(&s).map_err(|e| {
            minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string())
        })
    });
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .map_err(|e| template_error(name, &e))?;
    }
    Ok(env)
}

fn render(env: &Environment<'_>, name: &str, ctx: Value) -> Result<String, InitError> {
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| template_error(name, &e))
}

fn template_error(name: &str, e: &minijinja::Error) -> InitError {
    InitError::Template {
        name: name.to_string(),
        message: e.to_string(),
    }
}
