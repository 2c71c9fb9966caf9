//! `.code-intel/`, where code-intel keeps its own files in a repository (the symbol index,
//! the server's sessions and logs, the semantic index). An agent can run shell commands in
//! the repository, so it can replace that directory, or one inside it, with a symlink to
//! anywhere; the server's writes have fixed names, and followed through the link they would
//! overwrite files outside the repository. So every write under it is checked first: each
//! directory from `.code-intel` down to the file must be a real directory, and files
//! opened in place (locks, appended logs) refuse a symlink as their own name.

use std::fs::OpenOptions;
use std::path::Path;

/// The directory's name at the repository root.
pub(crate) const STATE_DIR: &str = ".code-intel";

/// Checks the directories between `.code-intel` and `file` (both ends included, the file
/// itself not): each that exists must be a directory, not a symlink. A path with no
/// `.code-intel` component is not code-intel's state and passes. A missing directory
/// passes too: its writer creates it as a real directory.
pub(crate) fn check_path(file: &Path) -> std::io::Result<()> {
    let Some(parent) = file.parent() else {
        return Ok(());
    };
    let Some(top) = parent
        .ancestors()
        .position(|dir| dir.file_name().is_some_and(|n| n == STATE_DIR))
    else {
        return Ok(());
    };
    for dir in parent.ancestors().take(top + 1) {
        let refuse = |what: &str| {
            Err(std::io::Error::other(format!(
                "{} {what}: code-intel writes its state only into a real directory of the repository, so nothing was written; remove it (`rm {}`) and run again",
                dir.display(),
                dir.display()
            )))
        };
        match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
            Ok(m) if m.file_type().is_symlink() => return refuse("is a symbolic link"),
            Ok(m) if !m.is_dir() => return refuse("is not a directory"),
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Checks `.code-intel/` of the repository at `root` (see [`check_path`]).
pub(crate) fn check(root: &Path) -> std::io::Result<()> {
    check_path(&root.join(STATE_DIR).join("-"))
}

/// `options` made to refuse a symlink as the opened file's own name (`O_NOFOLLOW`), for
/// the files under `.code-intel/` that are opened in place rather than replaced by rename.
pub(crate) fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt as _;
    options.custom_flags(nix::libc::O_NOFOLLOW)
}

/// Opens `path` (under `.code-intel/`) in place: its directories checked and created, the
/// file itself never through a symlink.
pub(crate) fn open_in_place(
    path: &Path,
    options: &mut OpenOptions,
) -> std::io::Result<std::fs::File> {
    check_path(path)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    no_follow(options).open(path)
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
    fn links_anywhere_below_the_state_dir_are_refused() {
        let base = std::env::temp_dir().join(format!("ci-state-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let _base = TempDir(base.clone());
        let repo = base.join("repo");
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();

        // Missing, or real: fine.
        check(&repo).unwrap();
        check_path(&repo.join(".code-intel/sessions/x.json")).unwrap();
        check_path(&repo.join("src/.hidden/x")).unwrap();
        std::fs::create_dir_all(repo.join(".code-intel/sessions")).unwrap();
        check_path(&repo.join(".code-intel/sessions/x.json")).unwrap();

        // A linked subdirectory, then a linked .code-intel itself.
        std::fs::remove_dir(repo.join(".code-intel/sessions")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, repo.join(".code-intel/sessions")).unwrap();
        let e = check_path(&repo.join(".code-intel/sessions/x.json")).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        check(&repo).unwrap();
        std::fs::remove_dir_all(repo.join(".code-intel")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, repo.join(".code-intel")).unwrap();
        assert!(check(&repo).is_err());
        let e = crate::codeintel::store::atomic_write(
            &repo.join(".code-intel/sessions/current.json"),
            b"{}",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(".code-intel is a symbolic link"),
            "{e}"
        );
        assert!(
            std::fs::read_dir(&elsewhere).unwrap().next().is_none(),
            "nothing written through the link"
        );

        // A file opened in place refuses a link as its own name.
        std::fs::remove_file(repo.join(".code-intel")).unwrap();
        std::fs::create_dir_all(repo.join(".code-intel/logs")).unwrap();
        std::os::unix::fs::symlink(
            elsewhere.join("victim"),
            repo.join(".code-intel/logs/d.jsonl"),
        )
        .unwrap();
        let opened = open_in_place(
            &repo.join(".code-intel/logs/d.jsonl"),
            OpenOptions::new().create(true).append(true),
        );
        assert!(opened.is_err());
        assert!(!elsewhere.join("victim").exists());
    }
}
