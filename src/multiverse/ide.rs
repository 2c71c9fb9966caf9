//! The IDE's files as the daemon serves them: the copy embedded at build time (`ide/`,
//! by `build.rs`), or, for whoever works on the IDE, the same files read from the
//! directory `MULTIVERSE_IDE_DIR` names (edit, reload, no rebuild). Only names made of
//! plain segments with a known type are served; nothing outside that table or that
//! directory is reachable.

use crate::environment::Environment;
use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/ide_files.rs"));

/// The variable naming a directory to serve the IDE from instead of the embedded copy.
pub const IDE_DIR_VARIABLE: &str = "MULTIVERSE_IDE_DIR";

/// The largest file served from `MULTIVERSE_IDE_DIR`.
const MAX_DEV_FILE_BYTES: u64 = 8 << 20;

/// One file of the IDE, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdeFile {
    pub content_type: &'static str,
    pub body: Cow<'static, [u8]>,
}

/// Where the IDE's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdeSource {
    /// The copy in the binary.
    Embedded,
    /// A directory on disk (`MULTIVERSE_IDE_DIR`).
    Directory(PathBuf),
}

impl IdeSource {
    /// The directory `MULTIVERSE_IDE_DIR` names in `env`, else the embedded copy.
    pub fn from_env(env: &Environment) -> IdeSource {
        env.path(IDE_DIR_VARIABLE)
            .map_or(IdeSource::Embedded, IdeSource::Directory)
    }

    /// The file at `path` (relative, `/`-separated; empty means `index.html`), if it is
    /// one of the IDE's.
    pub fn file(&self, path: &str) -> Option<IdeFile> {
        let path = if path.is_empty() { "index.html" } else { path };
        let content_type = content_type(path)?;
        if !plain(path) {
            return None;
        }
        let body = match self {
            IdeSource::Embedded => IDE_FILES
                .iter()
                .find(|(name, _)| *name == path)
                .map(|(_, bytes)| Cow::Borrowed(*bytes))?,
            IdeSource::Directory(dir) => Cow::Owned(read_confined(dir, path)?),
        };
        Some(IdeFile { content_type, body })
    }
}

/// The names of the embedded files (for tests and `--help`-like listings).
pub fn embedded_files() -> impl Iterator<Item = &'static str> {
    IDE_FILES.iter().map(|(name, _)| *name)
}

/// The type of a file the IDE may have, by its extension; others are not served.
fn content_type(path: &str) -> Option<&'static str> {
    let extension = path.rsplit_once('.')?.1;
    Some(match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        "woff2" => "font/woff2",
        _ => return None,
    })
}

/// Whether `path` is relative and made of plain names (no `..`, no `.`, no empty segment,
/// no backslash, no hidden file).
fn plain(path: &str) -> bool {
    !path.contains('\\')
        && path.split('/').all(|segment| {
            !segment.is_empty()
                && !segment.starts_with('.')
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Reads `dir/path` when, resolved, it is a regular file inside `dir` (a link out of the
/// directory is refused) and not too large.
fn read_confined(dir: &Path, path: &str) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let root = dir.canonicalize().ok()?;
    let file = root.join(path).canonicalize().ok()?;
    if !file.starts_with(&root) || !file.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&file)
        .ok()?
        .take(MAX_DEV_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_of_known_types_are_files() {
        for bad in [
            "../Cargo.toml",
            "a/../../x.js",
            "./app.js",
            "/etc/passwd.js",
            ".hidden.js",
            "a//b.js",
            "a\\b.js",
            "app.rs",
            "README",
        ] {
            assert!(
                content_type(bad).is_none() || !plain(bad),
                "{bad} would be served"
            );
        }
        assert!(plain("app.js") && content_type("app.js").is_some());
        assert!(plain("icons/run.svg") && content_type("icons/run.svg").is_some());
    }

    #[test]
    fn a_directory_source_serves_its_files_and_nothing_outside() {
        let base = std::env::temp_dir().join(format!("mv-ide-src-{}", std::process::id()));
        let dir = base.join("ide");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("index.html"), "<!doctype html>").unwrap();
        std::fs::write(dir.join("sub/x.js"), "export {}").unwrap();
        std::fs::write(base.join("secret.js"), "secret").unwrap();
        std::os::unix::fs::symlink(base.join("secret.js"), dir.join("out.js")).unwrap();
        let source = IdeSource::Directory(dir.clone());
        let index = source.file("").unwrap();
        assert_eq!(index.content_type, "text/html; charset=utf-8");
        assert_eq!(&*index.body, b"<!doctype html>");
        assert_eq!(&*source.file("sub/x.js").unwrap().body, b"export {}");
        assert_eq!(source.file("../secret.js"), None);
        assert_eq!(source.file("out.js"), None, "a link out of the directory");
        assert_eq!(source.file("missing.js"), None);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn the_embedded_copy_is_the_ide_directory_byte_for_byte() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ide");
        let mut on_disk = Vec::new();
        let mut pending = vec![dir.clone()];
        while let Some(next) = pending.pop() {
            for entry in std::fs::read_dir(&next).unwrap() {
                let path = entry.unwrap().path();
                let hidden = path.file_name().unwrap().to_string_lossy().starts_with('.');
                if path.is_dir() && !hidden {
                    pending.push(path);
                } else if path.is_file() && !hidden {
                    let name = path
                        .strip_prefix(&dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    on_disk.push((name, std::fs::read(&path).unwrap()));
                }
            }
        }
        on_disk.sort();
        let embedded: Vec<(String, Vec<u8>)> = IDE_FILES
            .iter()
            .map(|(name, bytes)| (name.to_string(), bytes.to_vec()))
            .collect();
        let names = |files: &[(String, Vec<u8>)]| -> Vec<String> {
            files.iter().map(|(n, _)| n.clone()).collect()
        };
        assert_eq!(names(&embedded), names(&on_disk));
        assert!(embedded == on_disk, "an embedded file differs from ide/");
        // Every file is one the server will send (a known type, a plain name).
        for (name, _) in &embedded {
            assert!(
                IdeSource::Embedded.file(name).is_some(),
                "{name} is not served"
            );
        }
    }

    #[test]
    fn modules_in_subdirectories_are_served_as_javascript() {
        // The sections of the views, the strings' tables and the Markdown library sit in
        // subdirectories of ide/ and are imported by relative paths.
        for name in [
            "locales/en.js",
            "locales/ja.js",
            "lib/markdown/markdown.js",
            "lib/markdown/inline.js",
            "task/attempts.js",
            "graph/render.js",
            "chat/turn.js",
        ] {
            let file = IdeSource::Embedded
                .file(name)
                .unwrap_or_else(|| panic!("{name} is not served"));
            assert_eq!(
                file.content_type, "text/javascript; charset=utf-8",
                "{name}"
            );
            assert!(
                String::from_utf8_lossy(&file.body).contains("export"),
                "{name} is not a module"
            );
        }
        assert!(plain("lib/markdown/markdown.js") && plain("locales/ja.js"));
        assert_eq!(
            content_type("locales/ja.json"),
            Some("application/json"),
            "a table as JSON would be served too"
        );
    }

    #[test]
    fn the_embedded_copy_has_the_ide_entry_point() {
        let names: Vec<&str> = embedded_files().collect();
        assert!(names.contains(&"index.html"), "{names:?}");
        assert!(names.contains(&"app.js"), "{names:?}");
        let index = IdeSource::Embedded.file("").unwrap();
        assert!(String::from_utf8_lossy(&index.body).contains("app.js"));
    }
}
