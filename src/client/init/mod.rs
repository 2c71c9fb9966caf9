//! `code-intel init`: sets a repository up for Claude Code and Codex. Every file is
//! computed first (pure: [`render`], [`merge`], [`rules`]); only when all of them could be
//! computed does [`run`] write anything, so a refused file never leaves a half-done setup.
//!
//! `client::init` is `code-intel init`: it sets a repository up for Claude Code and Codex.
//! `render` fills the templates of the top-level `templates/` directory (embedded with
//! `include_str!`, rendered with minijinja): the `.code-intel/` prompts in English or
//! Japanese, `config.yml`, `context.yml` (with the list items of `CLAUDE.md`/`AGENTS.md` as
//! `project_rules`, each with its `file:line`, from `rules`), and the `/code` command and
//! Codex skill, whose flag table and phase list come from the loaded contract. `merge`
//! merges the Claude Code JSON files key by key (`.mcp.json`, `enabledMcpjsonServers`, the
//! hooks) and replaces a marked block in `.codex/config.toml`. `run` plans every file first
//! and writes (atomically, with `codeintel::store::atomic_write`) only when all of them could be computed, so a JSON file
//! that does not parse stops init before anything changes. `manifest` keeps the sha256 of
//! what init last wrote to each file it owns in `.code-intel/init-manifest.json`.

mod manifest;
mod merge;
mod render;
mod report;
mod rules;

use std::path::Path;

use crate::codeintel::store::atomic_write;
use crate::contract::Contract;

pub(crate) use merge::JsonProblem;
pub(crate) use report::{FileReport, InitError, InitReport, Kept, Options, Status};

/// A file's new content and how it is reported, decided before anything is written.
struct Planned {
    path: String,
    status: Status,
    /// `Some` when the file must be written.
    write: Option<String>,
}

/// Sets `options.root` up and reports what it did to every file.
pub(crate) fn run(contract: &Contract, options: &Options) -> Result<InitReport, InitError> {
    let root = options.root.as_path();
    if !root.is_dir() {
        return Err(InitError::NotADirectory(root.to_path_buf()));
    }
    if !contract.locales.contains(&options.locale) {
        return Err(InitError::UnknownLocale {
            locale: options.locale.clone(),
            known: contract.locales.clone(),
        });
    }
    let old_manifest = manifest::Manifest::parse(read_optional(root, manifest::PATH)?.as_deref());
    let mut new_manifest = old_manifest.clone();
    let project_rules = rules::collect(&|name| read_optional(root, name))?;

    let mut plan = Vec::new();
    for (path, content) in render::owned_files(contract, options, &project_rules)? {
        let on_disk = read_optional(root, &path)?;
        plan.push(plan_owned(
            path,
            content,
            on_disk,
            options.force,
            &old_manifest,
            &mut new_manifest,
        ));
    }
    for (path, merge) in merge::json_files(&options.command) {
        let on_disk = read_optional(root, path)?;
        let merged = merge(on_disk.as_deref()).map_err(|problem| InitError::Json {
            path: path.to_string(),
            problem,
        })?;
        plan.push(match (on_disk, merged) {
            (None, Some(text)) => planned(path, Status::Created, Some(text)),
            (Some(_), Some(text)) => planned(path, Status::Updated, Some(text)),
            (_, None) => planned(path, Status::Unchanged, None),
        });
    }
    let codex_path = merge::CODEX_CONFIG;
    let block = render::codex_block(&options.command)?;
    let on_disk = read_optional(root, codex_path)?;
    plan.push(plan_codex_config(
        on_disk,
        &block,
        options.force,
        &old_manifest,
        &mut new_manifest,
    ));

    for p in &plan {
        if let Some(text) = &p.write {
            atomic_write(&root.join(&p.path), text.as_bytes()).map_err(|source| {
                InitError::Write {
                    path: root.join(&p.path),
                    source,
                }
            })?;
        }
    }
    // The machine-local files the server and `index` will write are never the project's.
    crate::codeintel::gitignore::ensure_gitignore(root).map_err(|source| InitError::Write {
        path: root.join(".code-intel/.gitignore"),
        source,
    })?;
    if new_manifest != old_manifest {
        let path = root.join(manifest::PATH);
        let text = new_manifest.to_text().map_err(|e| InitError::Json {
            path: manifest::PATH.to_string(),
            problem: JsonProblem::Encode(e.to_string()),
        })?;
        atomic_write(&path, text.as_bytes()).map_err(|source| InitError::Write { path, source })?;
    }
    // Personal files (the server's approval in Claude Code's local settings) stay out of
    // every commit, the task's included.
    let excluded = crate::git::exclude_personal_files(root).map_err(|e| match e {
        crate::git::GitError::Io { path, source, .. } => InitError::Write { path, source },
        other => InitError::Write {
            path: root.join(".git/info/exclude"),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    Ok(InitReport {
        excluded,
        files: plan
            .into_iter()
            .map(|p| FileReport {
                path: p.path,
                status: p.status,
            })
            .collect(),
    })
}

fn planned(path: &str, status: Status, write: Option<String>) -> Planned {
    Planned {
        path: path.to_string(),
        status,
        write,
    }
}

/// A file init owns entirely: written when absent, replaced when it is still what init
/// wrote last time (or with `--force`), otherwise kept, because the user edited it.
fn plan_owned(
    path: String,
    content: String,
    on_disk: Option<String>,
    force: bool,
    old: &manifest::Manifest,
    new: &mut manifest::Manifest,
) -> Planned {
    let ours = manifest::hash(&content);
    let (status, write) = match on_disk {
        None => (Status::Created, Some(content)),
        Some(text) if text == content => (Status::Unchanged, None),
        Some(text) if force || old.get(&path) == Some(manifest::hash(&text).as_str()) => {
            (Status::Updated, Some(content))
        }
        Some(_) => (Status::Kept(Kept::EditedByYou), None),
    };
    if status != Status::Kept(Kept::EditedByYou) {
        new.set(&path, ours);
    }
    Planned {
        path,
        status,
        write,
    }
}

/// `.codex/config.toml` may hold the user's own settings, and there is no TOML parser in
/// the crate, so init owns only a marked block in it (see [`merge::replace_block`]).
fn plan_codex_config(
    on_disk: Option<String>,
    block: &str,
    force: bool,
    old: &manifest::Manifest,
    new: &mut manifest::Manifest,
) -> Planned {
    let path = merge::CODEX_CONFIG;
    let key = format!("{path}#code-intel");
    let ours = manifest::hash(block);
    let existed = on_disk.is_some();
    let text = on_disk.unwrap_or_default();
    let existing = merge::find_block(&text);
    let (status, write) = match existing {
        Some(current) if current == block => (Status::Unchanged, None),
        Some(current) if !force && old.get(&key) != Some(manifest::hash(current).as_str()) => {
            (Status::Kept(Kept::EditedByYou), None)
        }
        None if merge::configures_code_intel(&text) => (Status::Kept(Kept::ConfiguredByYou), None),
        _ => {
            let status = if existed {
                Status::Updated
            } else {
                Status::Created
            };
            (status, Some(merge::replace_block(&text, block)))
        }
    };
    if matches!(
        status,
        Status::Created | Status::Updated | Status::Unchanged
    ) {
        new.set(&key, ours);
    }
    planned(path, status, write)
}

/// A file under `root`, or `None` when it does not exist.
fn read_optional(root: &Path, relative: &str) -> Result<Option<String>, InitError> {
    let path = root.join(relative);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InitError::Read { path, source }),
    }
}
