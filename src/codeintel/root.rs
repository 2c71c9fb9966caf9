//! The repository root and path confinement: every path a client gives is resolved inside
//! the root, and every path shown is relative to it with `/` separators.
//!
//! A client path is refused when it is absolute outside the root, climbs out with `..`, or
//! reaches outside through a symlink (checked on the canonical path).

use std::path::{Component, Path, PathBuf};

use super::error::Error;
pub(crate) use super::error::PathError;

/// A repository root, canonicalised once, with the globs the project excludes from every
/// walk (`index.exclude` in `.code-intel/config.yml`), on top of `.gitignore`.
#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
    excludes: std::sync::Arc<Vec<String>>,
}

impl Root {
    /// Opens `dir` as the root; it must exist.
    pub fn open(dir: &Path) -> Result<Root, Error> {
        let path = dir.canonicalize().map_err(|e| Error::Root {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
        if !path.is_dir() {
            return Err(Error::Root {
                path: dir.to_path_buf(),
                reason: "not a directory".into(),
            });
        }
        Ok(Root {
            path,
            excludes: std::sync::Arc::default(),
        })
    }

    /// This root with `globs` (gitignore syntax, relative to the root) left out of every
    /// walk: search, the symbol index and the semantic index. A glob that does not parse is
    /// an error naming it.
    pub fn excluding(mut self, globs: &[String]) -> Result<Root, Error> {
        let mut check = ignore::overrides::OverrideBuilder::new(&self.path);
        for g in globs {
            check.add(&format!("!{g}")).map_err(|e| Error::Glob {
                glob: g.clone(),
                message: e.to_string(),
            })?;
        }
        self.excludes = std::sync::Arc::new(globs.to_vec());
        Ok(self)
    }

    pub(crate) fn excludes(&self) -> &[String] {
        &self.excludes
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Resolves a client path (relative to the root, or absolute inside it) to an existing
    /// file or directory inside the root, following symlinks only where they stay inside.
    pub(crate) fn resolve(&self, client: &str) -> Result<PathBuf, PathError> {
        let given = Path::new(client);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.path.join(given)
        };
        // Refuse lexical escapes before touching the file system, so a missing path that
        // would climb out is still reported as outside rather than as missing.
        let mut depth: i64 = 0;
        let relative = joined
            .strip_prefix(&self.path)
            .map_err(|_| PathError::OutsideRoot(client.to_string()))?;
        for c in relative.components() {
            match c {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                _ => {}
            }
            if depth < 0 {
                return Err(PathError::OutsideRoot(client.to_string()));
            }
        }
        let canonical = joined
            .canonicalize()
            .map_err(|_| PathError::NotFound(client.to_string()))?;
        if !canonical.starts_with(&self.path) {
            return Err(PathError::OutsideRoot(client.to_string()));
        }
        Ok(canonical)
    }

    /// The root-relative display form of a path under the root (`src/main.rs`).
    pub(crate) fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.path).unwrap_or(path);
        let mut out = String::new();
        for (i, c) in rel.components().enumerate() {
            if i > 0 {
                out.push('/');
            }
            out.push_str(&c.as_os_str().to_string_lossy());
        }
        out
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
    fn confines_paths_to_the_root() {
        let base = std::env::temp_dir().join(format!("code-intel-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let _base = TempDir(base.clone());
        std::fs::create_dir_all(base.join("repo/src")).unwrap();
        std::fs::write(base.join("repo/src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(base.join("secret.txt"), "secret").unwrap();
        let root = Root::open(&base.join("repo")).unwrap();
        assert_eq!(
            root.relative(&root.resolve("src/a.rs").unwrap()),
            "src/a.rs"
        );
        assert_eq!(
            root.relative(&root.resolve("src/../src/a.rs").unwrap()),
            "src/a.rs"
        );
        assert!(matches!(
            root.resolve("../secret.txt"),
            Err(PathError::OutsideRoot(_))
        ));
        assert!(matches!(
            root.resolve("src/../../secret.txt"),
            Err(PathError::OutsideRoot(_))
        ));
        assert!(matches!(
            root.resolve(base.join("secret.txt").to_str().unwrap()),
            Err(PathError::OutsideRoot(_))
        ));
        assert!(matches!(
            root.resolve("nope.rs"),
            Err(PathError::NotFound(_))
        ));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.join("secret.txt"), base.join("repo/link.txt"))
                .unwrap();
            assert!(matches!(
                root.resolve("link.txt"),
                Err(PathError::OutsideRoot(_))
            ));
        }
    }
}
