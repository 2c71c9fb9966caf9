//! Build script: embeds the IDE's files (`ide/`) in the binary as a table of
//! `(path, bytes)`, so `multiverse serve` serves the IDE with no files beside it and
//! `cargo install` needs no JavaScript toolchain. The table is generated from the
//! directory's listing, so a new file in `ide/` is served without a hand-kept list.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The IDE's directory, relative to the manifest.
const IDE_DIR: &str = "ide";

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let ide = root.join(IDE_DIR);
    // A directory makes cargo rerun the script when anything under it changes.
    println!("cargo:rerun-if-changed={IDE_DIR}");
    let mut files = Vec::new();
    collect(&ide, &ide, &mut files);
    files.sort();
    let mut table = String::from(
        "/// The IDE's files: path under `ide/` (with `/`), contents.\n\
         pub(crate) static IDE_FILES: &[(&str, &[u8])] = &[\n",
    );
    for (name, path) in &files {
        let _ = writeln!(table, "    ({name:?}, include_bytes!({path:?})),");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("ide_files.rs"), table).expect("OUT_DIR is writable");
}

/// Every regular file under `dir` (hidden ones and symbolic links left out), as its
/// path relative to `base` and its absolute path.
fn collect(base: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if name.starts_with('.') || kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        if kind.is_dir() {
            collect(base, &path, files);
        } else if kind.is_file() {
            let relative = path.strip_prefix(base).expect("under base");
            let relative: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push((relative.join("/"), path.display().to_string()));
        }
    }
}
