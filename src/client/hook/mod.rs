//! `code-intel hook claude|codex`: the write gate where the agent writes. Claude Code and
//! Codex run it before every file-writing tool call (and Claude Code after every read),
//! one cold process per call, with the hook JSON on stdin.
//!
//! Before a write it finds the repository (the git work tree containing the client's
//! `cwd`), the session in progress (`.code-intel/sessions/current.json`) and its sealed
//! checkpoint, and decides from the checkpoint alone ([`write_rule::decide`]): the server
//! precomputed there whether the current state allows writes and the contract's refusal
//! texts ([`crate::server::session_record::WriteGate`]), so the hook never loads the contract,
//! never builds the symbol index and never creates a key. It fails closed: once a session
//! exists, a checkpoint it cannot verify, an input it cannot read, any error and even a
//! panic refuse the write, always as a deny answer with exit status 0 (a client lets a
//! write through when a hook exits otherwise).
//!
//! After a read it records the files the client's own read tools opened
//! ([`crate::server::reads`]), so that the server accepts them as explored. That hook
//! never refuses anything.
//!
//! `client::hook` is `code-intel hook claude|codex`, the write hook init registers (Claude
//! Code: PreToolUse on `Edit|Write|MultiEdit|NotebookEdit` and, in a group of its own, on
//! `Bash`, and PostToolUse on `Read|Grep|Glob`; Codex: PreToolUse on `apply_patch` and on
//! `Bash`, the name Codex gives its shell tool in hook input). `docs/enforcement.md` describes what it decides and why.

pub(crate) mod input;

use std::path::{Path, PathBuf};

use serde_json::json;

use input::{Event, HookInput, Writes};

use crate::codeintel::root::Root;
use crate::config::Config;
use crate::contract::Contract;
use crate::environment::Environment;
use crate::server::checkpoint::{
    CURRENT_FILE, Checkpoints, SESSIONS_DIR, SealKey, pointer_refusal,
};
use crate::server::paths::{canonical_prefix, is_reserved, judge as confine};
use crate::server::reads;
use crate::server::registry::{builtin_contract, english, registry};
use crate::server::words::Words;
use crate::server::write_rule::{self, Decision, Session, ShellTargets, Target, Targets};
use crate::shell::{self, WriteKind};

/// The client calling the hook (both speak the same JSON for what the hook reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    Claude,
    Codex,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::Codex => "Codex",
        }
    }
}

/// What the command prints; it always exits 0.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct HookOutput {
    /// The deny answer, if the call is refused; nothing for an allowed call.
    pub stdout: Option<String>,
    /// Problems that did not refuse anything (a read that could not be recorded).
    pub stderr: Option<String>,
}

impl HookOutput {
    fn allow() -> HookOutput {
        HookOutput::default()
    }

    fn deny(reason: &str) -> HookOutput {
        let reason = serde_json::to_string(reason)
            .unwrap_or_else(|_| "\"code-intel refused this write\"".to_string());
        HookOutput {
            stdout: Some(format!(
                "{{\"hookSpecificOutput\": {{\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", \"permissionDecisionReason\": {reason}}}}}"
            )),
            stderr: None,
        }
    }

    fn note(message: String) -> HookOutput {
        HookOutput {
            stdout: None,
            stderr: Some(message),
        }
    }
}

/// Answers one hook call. `stdin` is the hook JSON, `process_cwd` the working directory
/// to use when the input has none, `env` where the checkpoint key is
/// ([`SealKey::dir`]). Never panics: a panic inside becomes a deny.
pub(crate) fn run(
    client: Client,
    stdin: &[u8],
    process_cwd: Option<&Path>,
    env: &Environment,
) -> HookOutput {
    run_with(client, process_cwd, || answer(stdin, process_cwd, env))
}

/// [`run`] with its answer made by `answer`: a panic in it becomes a deny.
fn run_with(
    client: Client,
    process_cwd: Option<&Path>,
    answer: impl FnOnce() -> HookOutput,
) -> HookOutput {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(answer));
    match result {
        Ok(output) => output,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            // Wording it must not panic in turn: if it does, the English.
            std::panic::catch_unwind(|| {
                deny_before_session(process_cwd, |words| {
                    words.note(
                        "hook.failed",
                        &[("client", json!(client.name())), ("what", json!(what))],
                    )
                })
            })
            .unwrap_or_else(|_| {
                HookOutput::deny(&format!(
                    "the code-intel {} hook failed ({what}), so the write is refused; report this as a code-intel bug",
                    client.name()
                ))
            })
        }
    }
}

/// A denial made before any session is found (the input unreadable, no working
/// directory, the hook failed), worded by `say` ([`before_session`]).
fn deny_before_session(dir: Option<&Path>, say: impl FnOnce(Words) -> String) -> HookOutput {
    HookOutput::deny(&before_session(dir, say))
}

/// A text of the hook made without a session's wording, by `say` from the contract's
/// messages: the project's contract (`.code-intel/phase_contract.yml`, else the built-in
/// one) in the `locale` of `.code-intel/config.yml` when the repository of `dir` has one
/// that can be read, else in the contract's default locale (English for the built-in
/// contract).
fn before_session(dir: Option<&Path>, say: impl FnOnce(Words) -> String) -> String {
    let root = dir.map(repository_root);
    let project = root.as_deref().and_then(project_contract);
    let locale = root
        .as_deref()
        .and_then(|r| Config::load(r).ok())
        .and_then(|c| c.locale);
    let words = match project.as_ref().or_else(|| builtin_contract()) {
        Some(contract) => Words::new(
            contract,
            locale
                .as_deref()
                .filter(|l| contract.locales.iter().any(|d| d == l))
                .unwrap_or_else(|| contract.default_locale()),
        ),
        None => english(),
    };
    say(words)
}

/// The project's own contract at `root` (an overlay of the built-in one, or a complete
/// flow), when it has one that loads.
fn project_contract(root: &Path) -> Option<Contract> {
    let name = crate::contract::PROJECT_CONTRACT;
    let text = std::fs::read_to_string(root.join(name)).ok()?;
    let mut sources = crate::source::Sources::default();
    crate::contract::load_layered(&mut sources, Some((name.to_string(), text)), &[registry()])
        .ok()
        .ok()
}

fn answer(stdin: &[u8], process_cwd: Option<&Path>, env: &Environment) -> HookOutput {
    let input = match input::parse(stdin) {
        Ok(input) => input,
        Err(reason) => {
            return deny_before_session(process_cwd, |words| {
                words.note(
                    "hook.input_unreadable",
                    &[("reason", json!(reason.to_string()))],
                )
            });
        }
    };
    let cwd = input
        .cwd
        .clone()
        .or_else(|| process_cwd.map(Path::to_path_buf));
    match input.event {
        Event::PreToolUse => before_write(&input, cwd.as_deref(), env),
        Event::PostToolUse => after_read(&input, cwd.as_deref(), env),
        Event::Other(_) => HookOutput::allow(),
    }
}

fn before_write(input: &HookInput, cwd: Option<&Path>, env: &Environment) -> HookOutput {
    let writes = input::write_targets(&input.tool, &input.tool_input);
    if writes == Writes::Nothing {
        return HookOutput::allow();
    }
    let Some(cwd) = cwd else {
        // No directory, so no config to read the locale from either.
        return deny_before_session(None, |words| words.note("hook.no_working_directory", &[]));
    };
    let paths = match writes {
        Writes::Nothing => return HookOutput::allow(),
        Writes::Unknown(reason) => {
            // Which files a patch writes is unknown: the session of the working
            // directory's repository decides.
            return decide_in(&governing_root(cwd), cwd, Err(reason), env);
        }
        Writes::Shell(scan) => return before_shell(&scan, cwd, env),
        Writes::Paths(paths) => paths,
    };
    // The session of the working directory's repository judges every file (one outside
    // it is refused); and each file is also judged by the session of the repository it is
    // in, so a client working in a sub-repository or elsewhere cannot write around it.
    let cwd_root = governing_root(cwd);
    let output = decide_in(&cwd_root, cwd, Ok(&paths), env);
    if output.stdout.is_some() {
        return output;
    }
    let mut by_root: std::collections::BTreeMap<PathBuf, Vec<String>> = Default::default();
    for p in paths {
        let dir = canonical_prefix(&cwd.join(&p))
            .parent()
            .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf);
        let root = governing_root(&dir);
        if root != cwd_root {
            by_root.entry(root).or_default().push(p);
        }
    }
    for (root, paths) in by_root {
        let output = decide_in(&root, cwd, Ok(&paths), env);
        if output.stdout.is_some() {
            return output;
        }
    }
    HookOutput::allow()
}

/// Before a shell command that may write: judged by the session of the working directory's
/// repository, and each file it names also by the session of the repository it is in.
fn before_shell(scan: &shell::Scan, cwd: &Path, env: &Environment) -> HookOutput {
    let cwd_root = governing_root(cwd);
    let output = decide_shell_in(&cwd_root, cwd, &scan.writes, scan, env);
    if output.stdout.is_some() {
        return output;
    }
    let mut by_root: std::collections::BTreeMap<PathBuf, Vec<shell::Write>> = Default::default();
    for w in &scan.writes {
        let dir = canonical_prefix(&cwd.join(&w.path))
            .parent()
            .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf);
        let root = governing_root(&dir);
        if root != cwd_root {
            by_root.entry(root).or_default().push(w.clone());
        }
    }
    let files_only = shell::Scan::default();
    for (root, writes) in by_root {
        let output = decide_shell_in(&root, cwd, &writes, &files_only, env);
        if output.stdout.is_some() {
            return output;
        }
    }
    HookOutput::allow()
}

/// The decision of the session at `root` (if any) on a shell command's `writes` (and the
/// opaque writes and read problem of `scan`).
fn decide_shell_in(
    root: &Path,
    cwd: &Path,
    writes: &[shell::Write],
    scan: &shell::Scan,
    env: &Environment,
) -> HookOutput {
    let Ok(root) = Root::open(root) else {
        return HookOutput::allow();
    };
    let targets = Targets::Shell(ShellTargets {
        paths: writes
            .iter()
            .map(|w| {
                let target = confine(&root, cwd, &w.path);
                let kind = match &target {
                    Target::Inside(rel)
                        if w.kind == WriteKind::Remove && removal_restores(&root, rel) =>
                    {
                        WriteKind::RemoveNew
                    }
                    _ => w.kind,
                };
                (target, kind)
            })
            .collect(),
        opaque: scan.opaque.clone(),
        broad: scan.broad.clone(),
        unparsed: scan.unparsed.clone(),
    });
    match write_rule::decide(&session(&root, env), &targets) {
        Decision::Allow => HookOutput::allow(),
        Decision::Deny(reason) => HookOutput::deny(&reason),
    }
}

/// Whether removing `rel` can only bring the tree back to what git shows: HEAD's tree
/// does not hold it (no file, no directory with a tracked file in it) and git does not
/// ignore it (an ignored `node_modules/` or `.env` is no change the server refuses, so its
/// removal restores nothing). Anything that cannot be established answers no, so the
/// removal is judged as a write.
fn removal_restores(root: &Root, rel: &str) -> bool {
    crate::git::is_new_since_head(root.path(), rel)
}

/// The decision of the session at `root` (if any) on the files a write names, or on a
/// write whose files are unknown (the reason).
fn decide_in(
    root: &Path,
    cwd: &Path,
    paths: Result<&[String], String>,
    env: &Environment,
) -> HookOutput {
    let root = match Root::open(root) {
        Ok(root) => root,
        // No directory to look in means no session to find there.
        Err(_) => return HookOutput::allow(),
    };
    let targets = match paths {
        Ok(paths) => Targets::Paths(paths.iter().map(|p| confine(&root, cwd, p)).collect()),
        Err(reason) => Targets::Unknown(reason),
    };
    match write_rule::decide(&session(&root, env), &targets) {
        Decision::Allow => HookOutput::allow(),
        Decision::Deny(reason) => HookOutput::deny(&reason),
    }
}

/// The repository whose session governs `dir`: the nearest ancestor with a session in
/// progress (`.code-intel/sessions/current.json`), else the nearest git work tree,
/// else `dir` itself.
fn governing_root(dir: &Path) -> PathBuf {
    let start = canonical_prefix(dir);
    start
        .ancestors()
        .find(|d| {
            d.join(SESSIONS_DIR)
                .join(CURRENT_FILE)
                .symlink_metadata()
                .is_ok()
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repository_root(&start))
}

fn after_read(input: &HookInput, cwd: Option<&Path>, env: &Environment) -> HookOutput {
    let paths = input::read_targets(&input.tool, &input.tool_input, &input.tool_response);
    let Some(cwd) = cwd.filter(|_| !paths.is_empty()) else {
        return HookOutput::allow();
    };
    let Ok(root) = Root::open(&repository_root(cwd)) else {
        return HookOutput::allow();
    };
    if !pointer_exists(&root) {
        return HookOutput::allow();
    }
    let key = match SealKey::load(env) {
        Ok(Some(key)) => key,
        Ok(None) => {
            return HookOutput::note(
                "code-intel hook: no checkpoint key, so this read is not recorded".into(),
            );
        }
        Err(e) => return HookOutput::note(format!("code-intel hook: {e}")),
    };
    let id = match Checkpoints::new(root.path(), key.clone()).current() {
        Ok(Some(id)) => id,
        Ok(None) => return HookOutput::allow(),
        Err(e) => return HookOutput::note(format!("code-intel hook: {e}")),
    };
    let relative: Vec<String> = paths
        .iter()
        .filter_map(|p| match confine(&root, cwd, p) {
            // `.git/` and `.code-intel/` are never exploration, however they were read.
            Target::Inside(rel) if !rel.is_empty() && !is_reserved(&rel) => Some(rel),
            _ => None,
        })
        .collect();
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match reads::append(root.path(), &id, &key, &input.tool, &relative, at) {
        Ok(()) => HookOutput::allow(),
        Err(e) => HookOutput::note(format!(
            "code-intel hook: cannot record the read of {}: {e}",
            relative.join(", ")
        )),
    }
}

/// The git work tree containing `cwd` (the nearest directory with a `.git` entry), else
/// `cwd` itself.
fn repository_root(cwd: &Path) -> PathBuf {
    let start = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    start
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map_or(start.clone(), Path::to_path_buf)
}

fn pointer_exists(root: &Root) -> bool {
    // Anything but "not found" (a permission problem, say) counts as present, so the
    // session is looked at and any problem refuses the write.
    !matches!(
        root.path().join(SESSIONS_DIR).join(CURRENT_FILE).symlink_metadata(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    )
}

/// The session in progress, read and verified.
fn session(root: &Root, env: &Environment) -> Session {
    // A linked `.code-intel/` could name any session (or none): never trusted, nor is
    // anything read through it.
    if let Err(e) =
        crate::codeintel::state_dir::check_path(&root.path().join(SESSIONS_DIR).join(CURRENT_FILE))
    {
        return Session::Unreadable {
            reason: e.to_string(),
            refusal: None,
        };
    }
    // The refusal's wording, in the session's locale, comes with the pointer; without
    // it (a pointer that cannot be read), it is worded as before a session.
    let unworded = || {
        Some(before_session(Some(root.path()), |words| {
            words.note("hook.session_unreadable", &[])
        }))
    };
    let unreadable = |reason: String| Session::Unreadable {
        reason,
        refusal: pointer_refusal(root.path()).or_else(unworded),
    };
    if !pointer_exists(root) {
        return Session::None;
    }
    let key = match SealKey::load(env) {
        Ok(Some(key)) => key,
        Ok(None) => {
            let dir = SealKey::dir(env).map_or_else(|e| e.to_string(), |d| d.display().to_string());
            return unreadable(format!(
                "there is no checkpoint key in {dir}, so the session's checkpoint cannot be verified"
            ));
        }
        Err(e) => return unreadable(e.to_string()),
    };
    let checkpoints = Checkpoints::new(root.path(), key);
    let id = match checkpoints.current() {
        Ok(Some(id)) => id,
        Ok(None) => return Session::None,
        Err(e) => return unreadable(e.to_string()),
    };
    match checkpoints.load(&id) {
        Ok(Some(record)) => Session::Active(Box::new(record)),
        Ok(None) => unreadable(format!(
            "{} names session {id}, whose checkpoint {} is missing",
            root.path().join(SESSIONS_DIR).join(CURRENT_FILE).display(),
            checkpoints.path_of(&id).display()
        )),
        Err(e) => unreadable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    //! The denials made before a session is found come from the contract's messages, in
    //! the locale of the repository's `.code-intel/config.yml`.

    use std::path::PathBuf;

    use serde_json::{Map, Value, json};

    use super::*;
    use crate::machine::response::message;

    /// A directory with `.code-intel/config.yml` saying `locale: ja`; removed on drop.
    struct JaDir(PathBuf);

    impl JaDir {
        fn new(name: &str) -> JaDir {
            let dir = std::env::temp_dir().join(format!(
                "code-intel-hook-unit-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join(".code-intel/sessions")).unwrap();
            std::fs::write(dir.join(".code-intel/config.yml"), "locale: ja\n").unwrap();
            JaDir(dir.canonicalize().unwrap())
        }
    }

    impl Drop for JaDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn reason(output: &HookOutput) -> String {
        let stdout = output.stdout.as_deref().expect("a deny");
        let answer: Value = serde_json::from_str(stdout).unwrap();
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn text(key: &str, args: &[(&str, Value)], locale: &str) -> String {
        let args: Map<String, Value> = args
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect();
        message(builtin_contract().unwrap(), key, &args, locale).text
    }

    #[test]
    fn a_hook_that_fails_says_so_in_the_configured_locale() {
        let dir = JaDir::new("panic");
        let output = run_with(Client::Codex, Some(&dir.0), || panic!("boom"));
        let args = [("client", json!("Codex")), ("what", json!("boom"))];
        assert_eq!(reason(&output), text("hook.failed", &args, "ja"));
        assert!(reason(&output).contains("フックが失敗"), "{output:?}");
        // Without a directory to read a config in: the contract's English.
        let output = run_with(Client::Codex, None, || panic!("boom"));
        assert_eq!(reason(&output), text("hook.failed", &args, "en"));
    }

    #[test]
    fn a_write_without_a_working_directory_is_refused_in_the_contracts_words() {
        let input = json!({
            "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": "app.py", "content": "x"},
        });
        let output = run(
            Client::Claude,
            input.to_string().as_bytes(),
            None,
            &Environment::empty(),
        );
        assert_eq!(
            reason(&output),
            text("hook.no_working_directory", &[], "en")
        );
    }

    #[test]
    fn a_pointer_that_cannot_be_read_is_refused_in_the_configured_locale() {
        let dir = JaDir::new("pointer");
        std::fs::write(dir.0.join(".code-intel/sessions/current.json"), "{garbage").unwrap();
        let input = json!({
            "hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": dir.0,
            "tool_input": {"file_path": "app.py", "content": "x"},
        });
        let output = run(
            Client::Claude,
            input.to_string().as_bytes(),
            None,
            &Environment::empty(),
        );
        let reason = reason(&output);
        let template = text("hook.session_unreadable", &[], "ja");
        let (before, _) = template.split_once("{reason}").unwrap();
        assert!(reason.starts_with(before), "{reason}");
    }
}
