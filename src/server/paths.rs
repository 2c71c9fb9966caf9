//! One judgement of the paths clients name, shared by every tool and hook that takes one:
//! the write hook (`hook`), `check_write_target`, `add_explored_files` and the
//! exploration claims (`host`). A path is confined to the repository root exactly as the
//! file system will resolve it (an absolute path through a symlinked alias of the root is
//! inside, a symlink that leaves the root is outside, nothing is trimmed), and a path in
//! a reserved directory (`.git/`, code-intel's own `.code-intel/`) or one of the clients'
//! hook settings is never explorable or writable, however it is reached.

use std::path::{Path, PathBuf};

use crate::codeintel::root::{PathError, Root};

/// One path a client names, after confinement to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// Root-relative, `/`-separated.
    Inside(String),
    /// Outside the root (`..`, another absolute path, a symlink that leaves it), as given.
    Outside(String),
}

/// Directories no agent may explore, add or write, at any depth: git's own (its hooks
/// and config are code the user's next `git` command runs) and code-intel's state.
const RESERVED_DIRS: [&str; 2] = [".git", ".code-intel"];

/// The clients' settings that install the write hooks (Claude Code's shared and local
/// settings, Codex's project configuration and hooks file), at the root: an agent that
/// could write them could switch off the hooks that refuse its writes; and Claude Code's
/// personal memory file. Only the user changes them (`code-intel init` writes the
/// settings).
const RESERVED_FILES: [&str; 5] = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/config.toml",
    ".codex/hooks.json",
    // Claude Code's personal memory: standing instructions for every later session,
    // never committed, so never reviewed.
    "CLAUDE.local.md",
];

/// Whether a root-relative path is, or is inside, a reserved directory, or is one of the
/// clients' hook settings. Compared without case, so a case-insensitive file system
/// cannot reach `.git/` as `.GIT/`.
pub(crate) fn is_reserved(rel: &str) -> bool {
    rel.split('/')
        .any(|part| RESERVED_DIRS.iter().any(|r| part.eq_ignore_ascii_case(r)))
        || RESERVED_FILES.iter().any(|f| rel.eq_ignore_ascii_case(f))
}

/// A client path (absolute, or relative to `base`: the client's working directory for a
/// hook, the root for a tool) confined to the root. Paths that reach the root through a
/// symlinked prefix are first resolved, and a path that is itself a symlink must point
/// inside the root and at something that exists (a dangling link would create its target
/// wherever it points). An inside path is root-relative; whether it is reserved is
/// [`is_reserved`]'s answer on it.
pub(crate) fn judge(root: &Root, base: &Path, given: &str) -> Target {
    let outside = || Target::Outside(given.to_string());
    if given.is_empty() || given.contains('\0') {
        return outside();
    }
    let absolute = canonical_prefix(&base.join(given));
    let Some(text) = absolute.to_str() else {
        return outside();
    };
    let Ok(rel) = relative_path(root, text) else {
        return outside();
    };
    let on_disk = root.path().join(&rel);
    if on_disk
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
        && !on_disk
            .canonicalize()
            .is_ok_and(|target| target.starts_with(root.path()))
    {
        return outside();
    }
    Target::Inside(rel)
}

/// `path` with its longest existing prefix canonicalised and the rest appended as given,
/// so `/tmp/x/new.rs` under a symlinked `/tmp` compares with the canonical root.
pub(crate) fn canonical_prefix(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(canonical) = ancestor.canonicalize() {
            return match path.strip_prefix(ancestor) {
                Ok(rest) if !rest.as_os_str().is_empty() => canonical.join(rest),
                _ => canonical,
            };
        }
    }
    path.to_path_buf()
}

/// The root-relative `/`-separated form of a client path that stays inside the root,
/// whether or not it exists yet. Existing paths are resolved through symlinks; a path
/// that does not exist is checked through its nearest existing parent. The path is taken
/// exactly as given: `"a.py "` is another file than `a.py`, so nothing is trimmed.
fn relative_path(root: &Root, client: &str) -> Result<String, PathError> {
    let trimmed = client;
    if trimmed.is_empty() {
        return Err(PathError::NotFound(client.to_string()));
    }
    match root.resolve(trimmed) {
        Ok(abs) => Ok(root.relative(&abs)),
        Err(PathError::NotFound(_)) => {
            let given = Path::new(trimmed);
            let joined = if given.is_absolute() {
                given.to_path_buf()
            } else {
                root.path().join(given)
            };
            // A dangling symlink is not a file to be created: writing through it would
            // create its target, wherever that is.
            if std::fs::symlink_metadata(&joined).is_ok() {
                return Err(PathError::OutsideRoot(client.to_string()));
            }
            // A file to be created: its parent must resolve inside the root, and the
            // remaining components must be plain names.
            let mut missing = Vec::new();
            let mut parent = given;
            loop {
                let Some(name) = parent.file_name() else {
                    return Err(PathError::OutsideRoot(client.to_string()));
                };
                missing.push(name.to_string_lossy().into_owned());
                parent = parent.parent().unwrap_or(Path::new(""));
                let parent_text = parent.to_string_lossy();
                let probe = if parent_text.is_empty() {
                    "."
                } else {
                    parent_text.as_ref()
                };
                match root.resolve(probe) {
                    Ok(abs) => {
                        missing.reverse();
                        let base = root.relative(&abs);
                        let mut rel = if base.is_empty() || base == "." {
                            String::new()
                        } else {
                            base + "/"
                        };
                        rel.push_str(&missing.join("/"));
                        return Ok(rel);
                    }
                    Err(PathError::NotFound(_)) if !parent_text.is_empty() => {
                        // A missing parent that is a dangling symlink would be created
                        // wherever it points.
                        if std::fs::symlink_metadata(root.path().join(parent)).is_ok()
                            || (parent.is_absolute() && std::fs::symlink_metadata(parent).is_ok())
                        {
                            return Err(PathError::OutsideRoot(client.to_string()));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed when the test ends, pass or fail.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn client_paths_stay_inside_the_root_existing_or_not() {
        let dir = std::env::temp_dir().join(format!("ci-host-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _dir = TempDir(dir.clone());
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.py"), "x = 1\n").unwrap();
        let root = Root::open(&dir).unwrap();
        let rel = |p: &str| relative_path(&root, p);
        assert_eq!(rel("src/a.py").unwrap(), "src/a.py");
        assert_eq!(rel("./src/a.py").unwrap(), "src/a.py");
        assert_eq!(
            rel(&dir.join("src/a.py").to_string_lossy()).unwrap(),
            "src/a.py"
        );
        assert_eq!(rel("src/new/b.py").unwrap(), "src/new/b.py");
        assert_eq!(rel("c.py").unwrap(), "c.py");
        assert!(rel("../x.py").is_err());
        assert!(rel("src/../../x.py").is_err());
        assert!(rel("/etc/passwd").is_err());
        assert!(rel("new/..").is_err());
        assert!(rel("").is_err());
        assert_eq!(rel("src/a.py ").unwrap(), "src/a.py ", "nothing is trimmed");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
            assert!(rel("out/x.py").is_err(), "through a symlink to outside");
            std::os::unix::fs::symlink("/nonexistent/target.py", dir.join("dangling.py")).unwrap();
            assert!(rel("dangling.py").is_err(), "a dangling symlink");
            std::os::unix::fs::symlink("/nonexistent/dir", dir.join("dang")).unwrap();
            assert!(
                rel("dang/new.py").is_err(),
                "through a dangling symlinked directory"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reserved_directories_at_any_depth_and_case() {
        for rel in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/config",
            ".GIT/config",
            ".code-intel/sessions/current.json",
            "a/.Code-Intel/x",
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".CLAUDE/Settings.json",
            ".codex/config.toml",
            ".codex/hooks.json",
            "CLAUDE.local.md",
        ] {
            assert!(is_reserved(rel), "{rel}");
        }
        for rel in [
            "",
            "src/a.py",
            ".gitignore",
            ".github/workflows/ci.yml",
            "x.git/y",
            ".code-intel.md",
            "docs/.gitkeep",
            ".claude/commands/code.md",
            "sub/.claude/settings.json",
            ".mcp.json",
        ] {
            assert!(!is_reserved(rel), "{rel}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn aliases_and_links_are_judged_where_they_land() {
        let base = std::env::temp_dir().join(format!("ci-judge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let _base = TempDir(base.clone());
        std::fs::create_dir_all(base.join("repo/src")).unwrap();
        std::fs::create_dir_all(base.join("repo/.git/hooks")).unwrap();
        std::fs::write(base.join("repo/src/a.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(base.join("repo"), base.join("alias")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", base.join("repo/hooks")).unwrap();
        let root = Root::open(&base.join("repo")).unwrap();
        let judge = |base_dir: &Path, p: &str| judge(&root, base_dir, p);
        let inside = |p: &str| Target::Inside(p.to_string());
        let at_root = root.path().to_path_buf();
        // The same answer from the root, from a subdirectory and through the alias.
        assert_eq!(judge(&at_root, "src/a.py"), inside("src/a.py"));
        assert_eq!(judge(&at_root.join("src"), "a.py"), inside("src/a.py"));
        let aliased = base.join("alias/src/a.py");
        assert_eq!(
            judge(&at_root, aliased.to_str().unwrap()),
            inside("src/a.py")
        );
        assert_eq!(
            judge(&base.join("alias"), "src/new.py"),
            inside("src/new.py")
        );
        // Nothing trimmed, nothing empty.
        assert_eq!(judge(&at_root, "src/a.py "), inside("src/a.py "));
        assert!(matches!(judge(&at_root, ""), Target::Outside(_)));
        assert!(matches!(judge(&at_root, "src/../../x"), Target::Outside(_)));
        // A link into .git/ is judged as .git/.
        assert_eq!(
            judge(&at_root, "hooks/pre-commit"),
            inside(".git/hooks/pre-commit")
        );
        assert!(is_reserved(".git/hooks/pre-commit"));
        // The hook settings however spelled or reached: through a link, with `.` or `//`,
        // existing or not yet.
        std::fs::create_dir_all(base.join("repo/.claude")).unwrap();
        std::os::unix::fs::symlink(".claude", base.join("repo/cfg")).unwrap();
        for spelled in [
            "cfg/settings.json",
            "./.claude/./settings.json",
            ".claude//settings.json",
            "src/../.claude/settings.json",
            "cfg/settings.local.json",
        ] {
            match judge(&at_root, spelled) {
                Target::Inside(rel) => assert!(is_reserved(&rel), "{spelled} -> {rel}"),
                Target::Outside(_) => panic!("{spelled} judged outside"),
            }
        }
    }
}
