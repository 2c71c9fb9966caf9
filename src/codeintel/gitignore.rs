//! `.code-intel/.gitignore`: every writer of `.code-intel/` (the server, `init`, `index`, a
//! semantic sync) writes it first, so none of code-intel's machine-local files ever shows
//! as untracked.

use std::path::Path;

use super::state_dir::STATE_DIR;

/// `.code-intel/.gitignore`: code-intel's machine-local files (sessions, logs, the symbol
/// and semantic indexes, locks, temp files) never show up as changes of a task, nor get
/// committed; the configuration and prompts `init` writes are not in it, they are the
/// project's. It ignores itself too: untracked, it would be an unreviewed change that
/// blocks merges and slips into task commits.
const GITIGNORE: &str = ".gitignore";
const GITIGNORE_TEXT: &str = "# Written by code-intel: machine-local state, never committed.\n.gitignore\nsessions/\nlogs/\nsymbols.*\nsemantic/\ncontext_summaries.json\n*.lock\n*.tmp*\n";

/// Writes `.code-intel/.gitignore` unless it is current, or the user's own (it does not
/// start with our header): every writer of `.code-intel/` (the server, `init`, `index`,
/// a semantic sync) calls it first, so no machine-local file ever shows as untracked.
pub(crate) fn ensure_gitignore(root: &Path) -> std::io::Result<()> {
    let path = root.join(STATE_DIR).join(GITIGNORE);
    match std::fs::read_to_string(&path) {
        Ok(text) if text == GITIGNORE_TEXT || !text.starts_with("# Written by code-intel") => {
            Ok(())
        }
        _ => super::store::atomic_write(&path, GITIGNORE_TEXT.as_bytes()).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        }),
    }
}
