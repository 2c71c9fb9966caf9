//! `multiverse check`: the journal read against the state files, every disagreement a
//! [`Finding`] that says what is wrong and exactly what `--repair` would do, and the repair
//! itself, under the writer lock, each file replaced atomically with the damaged one kept
//! beside it. The journal is the truth: state files are rewritten from it; a journal damaged
//! in the middle is cut back to the entries before the damage, all of it kept aside.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::change::Area;
use super::error::{Finding, StoreError};
use super::journal::{self, Damage};
use super::layout::{JOURNAL_FILE, WorkspaceMeta, area_file};
use super::lock::{self, WriterLock};
use super::state_files;
use crate::multiverse::model::WorkspaceState;

/// What `check` found in a workspace.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// The journal's entries that can be trusted (all of them, when it is undamaged).
    pub entries: u64,
    pub findings: Vec<Finding>,
}

/// What a repair did: the findings it repaired and the copies of damaged files it kept.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepairReport {
    pub repaired: Vec<Finding>,
    pub kept: Vec<PathBuf>,
}

/// Reads the workspace at `dir` without changing anything (and without the lock: a
/// running daemon's state files may be a few entries behind, which is not a finding).
pub fn check(dir: &Path) -> Result<CheckReport, StoreError> {
    WorkspaceMeta::read(dir)?;
    let journal_path = dir.join(JOURNAL_FILE);
    let (scan, damage) = journal::scan_to_damage(&journal_path)?;
    let mut report = CheckReport {
        entries: scan.last_seq,
        findings: Vec::new(),
    };
    if let Some(damage) = &damage {
        report.findings.push(damage_finding(damage, scan.last_seq));
    } else if let Some((line, bytes)) = scan.torn {
        report.findings.push(Finding {
            key: "journal.torn",
            file: JOURNAL_FILE.into(),
            line: Some(line),
            problem: format!(
                "the last line ({bytes} bytes) is incomplete: an append a crash interrupted, never acknowledged"
            ),
            repair: "cut it off, keeping its bytes in history/journal.jsonl.torn-<line>-<time>"
                .into(),
        });
    }
    let entries = scan.entries.clone();
    let truth = fold(scan);
    for area in Area::ALL {
        if let Some(finding) = check_area(dir, area, &truth, &entries)? {
            report.findings.push(finding);
        }
    }
    Ok(report)
}

fn damage_finding(damage: &Damage, kept: u64) -> Finding {
    Finding {
        key: damage.error.key(),
        file: JOURNAL_FILE.into(),
        line: Some(damage.line),
        problem: format!("{}; {} line(s) follow it", damage.error, damage.lines_after),
        repair: format!(
            "keep the {kept} entries before line {}, and the whole damaged journal as history/journal.jsonl.damaged-<time>; the state files are rewritten from what is kept",
            damage.line
        ),
    }
}

/// The state the trusted entries fold to, from empty.
fn fold(scan: journal::Scan) -> WorkspaceState {
    let mut state = WorkspaceState::default();
    for entry in scan.entries {
        for change in entry.changes {
            change.apply(&mut state);
        }
    }
    state.seq = scan.last_seq;
    state
}

/// One area's file against the journal's fold: missing, unreadable, ahead of the journal,
/// or (with the entries it lacks folded in) different from it.
fn check_area(
    dir: &Path,
    area: Area,
    truth: &WorkspaceState,
    entries: &[journal::Entry],
) -> Result<Option<Finding>, StoreError> {
    let file = area_file(area);
    let rewrite =
        format!("rewrite {file} from the journal, keeping the old one as {file}.damaged-<time>");
    let found = match state_files::read_one(dir, area)? {
        state_files::One::Missing if truth.seq == 0 => return Ok(None),
        state_files::One::Missing => {
            return Ok(Some(Finding {
                key: "state.missing",
                file: file.into(),
                line: None,
                problem: "the file is missing".into(),
                repair: format!("write {file} from the journal"),
            }));
        }
        state_files::One::Unreadable(reason) => {
            return Ok(Some(Finding {
                key: "state.unreadable",
                file: file.into(),
                line: None,
                problem: format!("the file cannot be read: {reason}"),
                repair: rewrite,
            }));
        }
        state_files::One::Read(found) => found,
    };
    let mut folded = found.state;
    for entry in entries.iter().filter(|e| e.seq > found.seq) {
        for change in entry.changes.iter().filter(|c| c.area() == area) {
            change.clone().apply(&mut folded);
        }
    }
    if found.seq > truth.seq {
        return Ok(Some(Finding {
            key: "state.ahead_of_journal",
            file: file.into(),
            line: None,
            problem: format!(
                "it holds entries up to {} but the journal's trusted entries end at {}",
                found.seq, truth.seq
            ),
            repair: rewrite,
        }));
    }
    // The file plus the entries it lacks must be the journal's fold of this area.
    if !state_files::same_area(area, &folded, truth) {
        return Ok(Some(Finding {
            key: "state.differs",
            file: file.into(),
            line: None,
            problem: format!(
                "as of entry {}, it differs from the journal's fold",
                found.seq
            ),
            repair: rewrite,
        }));
    }
    Ok(None)
}

/// What a daemon (and `run`) checks before it starts: every finding but a torn journal
/// tail (which the writer cuts off itself, keeping its bytes) refuses the start, naming
/// each finding and `multiverse check --repair`.
pub fn verify(dir: &Path) -> Result<(), StoreError> {
    let report = check(dir)?;
    let findings: Vec<Finding> = report
        .findings
        .into_iter()
        .filter(|f| f.key != "journal.torn")
        .collect();
    if findings.is_empty() {
        return Ok(());
    }
    Err(StoreError::Damaged {
        dir: dir.to_path_buf(),
        findings,
    })
}

/// Repairs what [`check`] finds, as the workspace's writer (a daemon holding it is named
/// by the error): the journal first (cut back to its trusted entries, atomically), then
/// every state file that is not the journal's fold. Each replaced file is kept beside its
/// replacement. Returns what was done; a second `check` finds nothing.
pub fn repair(dir: &Path) -> Result<RepairReport, StoreError> {
    use crate::multiverse::clock::{Clock as _, SystemClock};
    WorkspaceMeta::read(dir)?;
    let _lock = WriterLock::acquire(&lock::lock_path(dir), SystemClock.rfc3339())?;
    let found = check(dir)?;
    let mut report = RepairReport::default();
    let journal_path = dir.join(JOURNAL_FILE);
    let (scan, damage) = journal::scan_to_damage(&journal_path)?;
    if damage.is_some() {
        let kept = journal::aside(&journal_path, "damaged");
        copy_synced(&journal_path, &kept)?;
        report.kept.push(kept);
        let trusted = read_prefix(&journal_path, scan.valid_len)?;
        crate::codeintel::store::atomic_write(&journal_path, &trusted)
            .map_err(StoreError::io(&journal_path))?;
    } else if let Some((line, _)) = scan.torn {
        report.kept.push(journal::keep_torn_tail(
            &journal_path,
            scan.valid_len,
            line,
        )?);
        let trusted = read_prefix(&journal_path, scan.valid_len)?;
        crate::codeintel::store::atomic_write(&journal_path, &trusted)
            .map_err(StoreError::io(&journal_path))?;
    }
    let truth = fold(journal::scan(&journal_path, 0)?);
    for finding in &found.findings {
        if let Some(area) = Area::ALL
            .into_iter()
            .find(|a| area_file(*a) == finding.file)
        {
            let path = dir.join(finding.file.as_str());
            if path.exists() {
                let kept = journal::aside(&path, "damaged");
                copy_synced(&path, &kept)?;
                report.kept.push(kept);
            }
            state_files::write(dir, area, &truth)?;
        }
    }
    // A journal cut back leaves every state file ahead of it or different: rewrite all.
    if damage.is_some() {
        for area in Area::ALL {
            if !found.findings.iter().any(|f| f.file == area_file(area)) {
                let path = dir.join(area_file(area));
                if path.exists() {
                    let kept = journal::aside(&path, "damaged");
                    copy_synced(&path, &kept)?;
                    report.kept.push(kept);
                }
                state_files::write(dir, area, &truth)?;
            }
        }
    }
    report.repaired = found.findings;
    Ok(report)
}

fn read_prefix(path: &Path, len: u64) -> Result<Vec<u8>, StoreError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(StoreError::io(path))?;
    let mut bytes = Vec::new();
    file.take(len)
        .read_to_end(&mut bytes)
        .map_err(StoreError::io(path))?;
    Ok(bytes)
}

/// A copy of `from` at `to`, synced, so the kept copy survives a crash of the repair.
fn copy_synced(from: &Path, to: &Path) -> Result<(), StoreError> {
    std::fs::copy(from, to).map_err(StoreError::io(to))?;
    std::fs::File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(StoreError::io(to))?;
    if let Some(parent) = to.parent() {
        crate::codeintel::store::sync_dir(parent);
    }
    Ok(())
}
