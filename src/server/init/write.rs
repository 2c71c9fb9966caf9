//! Atomic file replacement: a reader (or a crash) sees the old file or the new one, never
//! a half-written one.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to a temp file in the same directory, fsyncs it, renames it over `path`
/// and fsyncs the directory. Creates missing parent directories.
pub(super) fn atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = temp_path(path);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `settings.json` → `settings.json.tmp-<pid>-<nanos>`: unique per process and moment, so
/// two inits never share a temp file (`create_new` refuses a collision anyway).
fn temp_path(path: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}-{nanos}", std::process::id()));
    path.with_file_name(name)
}
