//! The task-branch lifecycle (`git`) on real repositories built in temp dirs:
//! opening refusals, starting with a dirty tree, stale branches, changes and changed
//! lines, reviewed commits, merges and their conflicts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use code_intel::git;
use code_intel::git::{
    ChangeStatus, Decision, GitError, MergeKind, Reviewed, StaleChoice, TaskBranch,
};
use git2::{Oid, Repository, RepositoryInitOptions, Signature};

use crate::support::TempDir;

/// A repository in a fresh temp dir, removed on drop.
struct TempRepo {
    dir: TempDir,
    repo: Repository,
}

fn temp_dir(name: &str) -> TempDir {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    TempDir::create(&format!(
        "code-intel-git-{name}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

impl TempRepo {
    /// A repository on `main` with no commit yet.
    fn empty(name: &str) -> TempRepo {
        let dir = temp_dir(name);
        let repo =
            Repository::init_opts(&dir, RepositoryInitOptions::new().initial_head("main")).unwrap();
        let mut config = repo.config().unwrap();
        config.set_str("user.name", "Test").unwrap();
        config.set_str("user.email", "test@example.com").unwrap();
        TempRepo { dir, repo }
    }

    /// A repository on `main` with one commit of `files`.
    fn with(name: &str, files: &[(&str, &str)]) -> TempRepo {
        let t = TempRepo::empty(name);
        for (path, content) in files {
            t.write(path, content);
        }
        t.commit_all("initial");
        t
    }

    fn open(&self) -> git::Repo {
        git::open(&self.dir).unwrap()
    }

    fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let full = self.dir.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(path)).ok()
    }

    fn remove(&self, path: &str) {
        std::fs::remove_file(self.dir.join(path)).unwrap();
    }

    /// `git add -A && git commit` on HEAD.
    fn commit_all(&self, message: &str) -> Oid {
        let mut index = self.repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
        let tree = self.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("Test", "test@example.com").unwrap();
        let parents: Vec<_> = self
            .repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<_> = parents.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    /// `git add <path>`.
    fn stage(&self, path: &str) {
        let mut index = self.repo.index().unwrap();
        if self.dir.join(path).exists() {
            index.add_path(Path::new(path)).unwrap();
        } else {
            index.remove_path(Path::new(path)).unwrap();
        }
        index.write().unwrap();
    }

    /// `git switch <branch>` (forced: tests only switch with a clean tree).
    fn switch(&self, branch: &str) {
        let reference = format!("refs/heads/{branch}");
        let tree = self
            .repo
            .find_reference(&reference)
            .unwrap()
            .peel_to_tree()
            .unwrap();
        self.repo
            .checkout_tree(
                tree.as_object(),
                Some(git2::build::CheckoutBuilder::new().force()),
            )
            .unwrap();
        self.repo.set_head(&reference).unwrap();
    }

    /// `git switch -c <branch>` at HEAD.
    fn branch(&self, branch: &str) {
        let head = self.repo.head().unwrap().peel_to_commit().unwrap();
        self.repo.branch(branch, &head, false).unwrap();
        self.repo.set_head(&format!("refs/heads/{branch}")).unwrap();
    }

    fn head(&self) -> String {
        self.repo.head().unwrap().shorthand().unwrap().to_string()
    }

    fn tip(&self, branch: &str) -> Option<Oid> {
        self.repo
            .find_branch(branch, git2::BranchType::Local)
            .ok()
            .and_then(|b| b.get().target())
    }

    /// `git status --porcelain`, as (path, status bits).
    fn status(&self) -> Vec<(String, u32)> {
        let mut options = git2::StatusOptions::new();
        options.include_untracked(true).recurse_untracked_dirs(true);
        let statuses = self.repo.statuses(Some(&mut options)).unwrap();
        let mut out: Vec<_> = statuses
            .iter()
            .map(|s| (s.path().unwrap().to_string(), s.status().bits()))
            .collect();
        out.sort();
        out
    }

    /// Every file of a commit's tree with its content.
    fn files_of(&self, commit: Oid) -> BTreeMap<String, String> {
        let tree = self.repo.find_commit(commit).unwrap().tree().unwrap();
        let mut out = BTreeMap::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if let Ok(blob) = entry.to_object(&self.repo).and_then(|o| o.peel_to_blob()) {
                out.insert(
                    format!("{dir}{}", entry.name().unwrap()),
                    String::from_utf8_lossy(blob.content()).into_owned(),
                );
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        out
    }

    /// Every file of the working tree (outside `.git`) with its content.
    fn worktree(&self) -> BTreeMap<String, String> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.file_name().unwrap() == ".git" {
                    continue;
                }
                if path.is_dir() {
                    walk(root, &path, out);
                } else {
                    let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                    let content =
                        String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                    out.insert(rel.replace('\\', "/"), content);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.dir, &self.dir, &mut out);
        out
    }
}

fn keep(path: &str) -> Reviewed {
    Reviewed {
        path: path.to_string(),
        decision: Decision::Keep,
        reason: None,
    }
}

fn discard(path: &str) -> Reviewed {
    Reviewed {
        path: path.to_string(),
        decision: Decision::Discard,
        reason: Some("debug leftover".to_string()),
    }
}

#[test]
fn open_refuses_what_has_no_branch_to_start_from() {
    let plain = temp_dir("plain");
    let err = git::open(&plain).unwrap_err();
    assert_eq!(err.key(), "git.not_a_repository", "{err}");
    let _ = std::fs::remove_dir_all(&plain);

    let bare_dir = temp_dir("bare");
    Repository::init_bare(&bare_dir).unwrap();
    let err = git::open(&bare_dir).unwrap_err();
    assert!(matches!(err, GitError::BareRepository { .. }), "{err}");
    let _ = std::fs::remove_dir_all(&bare_dir);

    let unborn = TempRepo::empty("unborn");
    let err = git::open(&unborn.dir).unwrap_err();
    assert!(
        matches!(&err, GitError::UnbornBranch { branch } if branch == "main"),
        "{err}"
    );
    assert!(err.to_string().contains("first commit"));

    let t = TempRepo::with("detached", &[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
    let err = git::open(&t.dir.join("sub")).unwrap_err();
    assert_eq!(err.key(), "git.not_repository_root", "{err}");
    let head = t.repo.head().unwrap().target().unwrap();
    t.repo.set_head_detached(head).unwrap();
    let err = git::open(&t.dir).unwrap_err();
    assert!(matches!(err, GitError::DetachedHead { .. }), "{err}");
    assert!(err.to_string().contains("git switch"));
}

#[test]
fn names_round_trip_through_the_public_api() {
    let name = git::checked_task_branch_name("abc-123", "feature/x").unwrap();
    assert_eq!(name, "llm_task_abc-123_from_feature__x");
    assert_eq!(
        git::parse_task_branch(&name),
        Some(("abc-123".to_string(), "feature/x".to_string()))
    );
    assert_eq!(git::parse_task_branch("feature/x"), None);
    assert!(git::checked_task_branch_name("a_b", "main").is_err());
    assert!(git::checked_task_branch_name("s", "a__b").is_err());
}

#[test]
fn starting_carries_a_dirty_tree_and_is_idempotent() {
    let t = TempRepo::with("start", &[("a.txt", "one\n"), ("b.txt", "two\n")]);
    t.write("a.txt", "one changed\n");
    t.write("b.txt", "two staged\n");
    t.stage("b.txt");
    t.write("new.txt", "untracked\n");
    let before_tree = t.worktree();
    let before_status = t.status();
    let main_tip = t.tip("main").unwrap();

    let repo = t.open();
    let (branch, carried) = repo.start_task_branch("s1").unwrap();
    assert_eq!(branch.name, "llm_task_s1_from_main");
    assert_eq!(branch.base_branch, "main");
    assert_eq!(branch.base_commit, main_tip.to_string());
    assert_eq!(carried, vec!["a.txt", "b.txt", "new.txt"]);
    assert_eq!(t.head(), "llm_task_s1_from_main");
    assert_eq!(t.worktree(), before_tree, "no file content changed");
    assert_eq!(
        t.status(),
        before_status,
        "index and tree carried as they were"
    );

    let (again, _) = repo.start_task_branch("s1").unwrap();
    assert_eq!(again, branch);
    let err = repo.start_task_branch("s2").unwrap_err();
    assert!(matches!(err, GitError::OnOtherTaskBranch { .. }), "{err}");
    assert_eq!(repo.current_task_branch().unwrap(), Some(branch));
}

#[test]
fn starting_from_a_slashed_branch_encodes_and_decodes_it() {
    let t = TempRepo::with("slashed", &[("a.txt", "a\n")]);
    t.branch("feature/x");
    let repo = t.open();
    let (branch, _) = repo.start_task_branch("s1").unwrap();
    assert_eq!(branch.name, "llm_task_s1_from_feature__x");
    assert_eq!(branch.base_branch, "feature/x");
    t.write("a.txt", "b\n");
    t.commit_all("work");
    let merged = repo.merge_into_base(&branch).unwrap();
    assert_eq!(merged.base_branch, "feature/x");
    assert_eq!(t.head(), "feature/x");

    t.branch("a__b");
    let err = repo.start_task_branch("s2").unwrap_err();
    assert_eq!(err.key(), "git.unsupported_base_name", "{err}");
    assert_eq!(t.head(), "a__b", "nothing moved");
}

#[test]
fn a_task_branch_left_by_a_kill_is_taken_up_unless_it_diverged() {
    let t = TempRepo::with("exists", &[("a.txt", "a\n")]);
    let repo = t.open();
    let main_tip = t.tip("main").unwrap();
    // Created, then killed before HEAD moved to it: at HEAD, it is checked out as it is,
    // carrying the uncommitted work.
    let (first, _) = repo.start_task_branch("s1").unwrap();
    t.switch("main");
    t.write("dirty.txt", "user\n");
    let (again, carried) = repo.start_task_branch("s1").unwrap();
    assert_eq!(again, first);
    assert_eq!(t.head(), first.name);
    assert_eq!(carried, vec!["dirty.txt"]);
    // Ahead of HEAD with its own commits only: checked out at its tip.
    t.remove("dirty.txt");
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    t.switch("main");
    let (ahead, _) = repo.start_task_branch("s1").unwrap();
    assert_eq!(t.head(), first.name);
    assert_eq!(ahead.base_commit, main_tip.to_string());
    assert_eq!(t.tip(&first.name), Some(task_tip));
    assert_eq!(t.read("a.txt").as_deref(), Some("task\n"));
    assert!(t.status().is_empty(), "{:?}", t.status());
    // Diverged from HEAD: not this session's work alone, refused with nothing moved.
    t.switch("main");
    t.write("a.txt", "main moved\n");
    t.commit_all("main moved");
    let err = repo.start_task_branch("s1").unwrap_err();
    assert!(matches!(err, GitError::TaskBranchExists { .. }), "{err}");
    assert_eq!(t.head(), "main");
    assert_eq!(t.tip(&first.name), Some(task_tip));
}

/// Leaves what a server killed midway through an action leaves besides its lock files: the
/// intent naming its process, now dead, and the refs it was writing.
fn killed_action(t: &TempRepo, refs: &[&str]) {
    let mut child = crate::sealed::command("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    write_intent(t, pid, refs);
}

fn write_intent(t: &TempRepo, pid: u32, refs: &[&str]) {
    let intent = serde_json::json!({"pid": pid, "started": null, "action": "start the task branch", "refs": refs});
    std::fs::write(
        t.dir.join(".git/code-intel-action.json"),
        intent.to_string(),
    )
    .unwrap();
}

#[test]
fn the_lock_files_of_a_killed_action_are_cleared() {
    let t = TempRepo::with("stale-locks", &[("a.txt", "a\n")]);
    let repo = t.open();
    let name = "llm_task_s1_from_main";
    killed_action(&t, &[&format!("refs/heads/{name}")]);
    for lock in [format!("refs/heads/{name}.lock"), "index.lock".to_string()] {
        t.write(&format!(".git/{lock}"), "");
    }
    let (branch, _) = repo.start_task_branch("s1").unwrap();
    assert_eq!(branch.name, name);
    assert_eq!(t.head(), name);
    for leftover in [
        format!("refs/heads/{name}.lock"),
        "index.lock".to_string(),
        "code-intel-action.json".to_string(),
    ] {
        assert!(!t.dir.join(".git").join(&leftover).exists(), "{leftover}");
    }
    // The index can be written again.
    t.write("a.txt", "task\n");
    repo.commit_reviewed(&branch, "task", &[keep("a.txt")])
        .unwrap();
}

#[test]
fn only_locks_of_a_dead_action_taken_during_it_and_held_by_no_one_are_cleared() {
    let t = TempRepo::with("lock-rule", &[("a.txt", "a\n")]);
    let repo = t.open();
    let ours = ".git/refs/heads/llm_task_s1_from_main.lock";
    let present = |path: &str| t.dir.join(path).exists();

    // No intent: a lock is someone else's.
    t.write(".git/index.lock", "");
    assert_eq!(repo.recover().unwrap(), git::Recovered::default());
    assert!(present(".git/index.lock"));

    // The intent of a live process: its locks and intent stay.
    let mut live = crate::sealed::command("sleep").arg("30").spawn().unwrap();
    write_intent(&t, live.id(), &["refs/heads/llm_task_s1_from_main"]);
    t.write(ours, "");
    assert_eq!(repo.recover().unwrap().removed, Vec::<String>::new());
    assert!(present(ours) && present(".git/index.lock"));
    assert!(present(".git/code-intel-action.json"));
    live.kill().unwrap();
    live.wait().unwrap();

    // A dead writer. Left: a lock older than its action, a lock some live process holds
    // open, a ref it did not name. Removed: its own fresh ref lock.
    let old = std::fs::File::options()
        .write(true)
        .open(t.dir.join(".git/index.lock"))
        .unwrap();
    old.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    drop(old);
    std::thread::sleep(std::time::Duration::from_millis(20));
    killed_action(&t, &["refs/heads/llm_task_s1_from_main"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    t.write(ours, "");
    t.write(".git/HEAD.lock", "");
    let held = std::fs::File::open(t.dir.join(".git/HEAD.lock")).unwrap();
    t.write(".git/refs/heads/main.lock", "");
    let recovered = repo.recover().unwrap();
    assert_eq!(
        recovered.removed,
        vec!["refs/heads/llm_task_s1_from_main.lock"]
    );
    assert_eq!(recovered.action.as_deref(), Some("start the task branch"));
    assert!(!present(ours));
    assert!(present(".git/index.lock"), "older than the action");
    assert!(present(".git/HEAD.lock"), "held open");
    assert!(
        present(".git/refs/heads/main.lock"),
        "a ref the action did not name"
    );
    assert!(!present(".git/code-intel-action.json"));
    drop(held);
}

/// main with `a.txt`; `llm_task_s1_from_main` two commits ahead; `llm_task_s2_from_main`
/// at main; a legacy branch of the original; HEAD back on main.
fn with_stale_branches(name: &str) -> TempRepo {
    let t = TempRepo::with(name, &[("a.txt", "a\n")]);
    t.branch("llm_task_s1_from_main");
    t.write("s1.txt", "1\n");
    t.commit_all("s1 one");
    t.write("s1.txt", "2\n");
    t.commit_all("s1 two");
    t.switch("main");
    t.branch("llm_task_s2_from_main");
    t.switch("main");
    t.branch("llm_task_session_20260126_210951_from_main");
    t.switch("main");
    t
}

#[test]
fn stale_branches_are_listed_with_commits_ahead() {
    let t = with_stale_branches("stale");
    let repo = t.open();
    let stale = repo
        .stale_task_branches(Some("llm_task_s2_from_main"))
        .unwrap();
    let summary: Vec<_> = stale
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.session_id.as_deref(),
                s.base_branch.as_deref(),
                s.commits_ahead,
                s.checked_out,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "llm_task_s1_from_main",
                Some("s1"),
                Some("main"),
                Some(2),
                false
            ),
            (
                "llm_task_session_20260126_210951_from_main",
                Some("session_20260126_210951"),
                Some("main"),
                Some(0),
                false
            ),
        ]
    );
    t.switch("llm_task_s1_from_main");
    let stale = repo.stale_task_branches(None).unwrap();
    assert_eq!(stale.len(), 3);
    assert!(stale[0].checked_out);
}

#[test]
fn the_stale_report_shows_age_and_subjects_bounded_with_the_checked_out_branch_first() {
    let t = with_stale_branches("report");
    t.switch("llm_task_session_20260126_210951_from_main");
    t.write("long.txt", "x\n");
    t.commit_all(&"a very long subject ".repeat(10));
    let repo = t.open();
    let report = repo.stale_report(None, 2, 1).unwrap();
    // Three branches, two shown: the checked-out one first, then by name.
    assert_eq!(report.more_branches, 1);
    let shown: Vec<_> = report
        .branches
        .iter()
        .map(|d| {
            (
                d.branch.name.as_str(),
                d.branch.checked_out,
                d.branch.commits_ahead,
                d.commits
                    .iter()
                    .map(|c| c.subject.chars().count())
                    .collect::<Vec<_>>(),
                d.more_commits,
                d.age_days,
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                "llm_task_session_20260126_210951_from_main",
                true,
                Some(1),
                vec![git::SUBJECT_CHARS],
                0,
                Some(0)
            ),
            ("llm_task_s1_from_main", false, Some(2), vec![6], 1, Some(0)),
        ]
    );
    let long = &report.branches[0].commits[0];
    assert!(long.subject.ends_with('…'), "{long:?}");
    assert_eq!(long.id.len(), 12);
    // The newest commit ahead comes first; with room for both, none is left out.
    let report = repo.stale_report(None, 10, 5).unwrap();
    assert_eq!(report.more_branches, 0);
    let s1 = &report.branches[1];
    let subjects: Vec<_> = s1.commits.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["s1 two", "s1 one"]);
    assert_eq!(s1.more_commits, 0);
    // A branch with nothing ahead shows no commits.
    assert!(report.branches[2].commits.is_empty());
    assert_eq!(report.branches[2].branch.commits_ahead, Some(0));
    // The session's own branch is never stale.
    let own = repo
        .stale_report(Some("llm_task_s1_from_main"), 10, 5)
        .unwrap();
    assert!(
        own.branches
            .iter()
            .all(|d| d.branch.name != "llm_task_s1_from_main")
    );
}

#[test]
fn resolve_continue_changes_nothing() {
    let t = with_stale_branches("continue");
    let repo = t.open();
    let outcome = repo.resolve_stale(StaleChoice::Continue).unwrap();
    assert!(outcome.deleted.is_empty() && outcome.merged.is_none());
    assert_eq!(repo.stale_task_branches(None).unwrap().len(), 3);
}

#[test]
fn resolve_delete_leaves_the_task_branch_and_reports_unmerged_work() {
    let t = with_stale_branches("delete");
    t.switch("llm_task_s1_from_main");
    let repo = t.open();
    let outcome = repo.resolve_stale(StaleChoice::Delete).unwrap();
    assert_eq!(outcome.checked_out.as_deref(), Some("main"));
    assert_eq!(t.head(), "main");
    let deleted: Vec<_> = outcome
        .deleted
        .iter()
        .map(|d| (d.name.as_str(), d.unmerged_commits))
        .collect();
    assert_eq!(
        deleted,
        vec![
            ("llm_task_s1_from_main", 2),
            ("llm_task_s2_from_main", 0),
            ("llm_task_session_20260126_210951_from_main", 0),
        ]
    );
    assert!(repo.stale_task_branches(None).unwrap().is_empty());
    assert_eq!(t.read("s1.txt"), None, "main's tree is checked out");
}

#[test]
fn resolve_merge_off_a_task_branch_deletes_nothing() {
    let t = with_stale_branches("merge-off");
    let repo = t.open();
    let err = repo.resolve_stale(StaleChoice::Merge).unwrap_err();
    assert_eq!(err.key(), "git.no_task_branch_checked_out", "{err}");
    assert_eq!(repo.stale_task_branches(None).unwrap().len(), 3);
}

#[test]
fn resolve_merge_merges_the_current_one_and_deletes_the_rest() {
    let t = with_stale_branches("merge");
    t.switch("llm_task_s1_from_main");
    let s1_tip = t.tip("llm_task_s1_from_main").unwrap();
    let repo = t.open();
    let outcome = repo.resolve_stale(StaleChoice::Merge).unwrap();
    let merged = outcome.merged.unwrap();
    assert_eq!(merged.kind, MergeKind::FastForward);
    assert_eq!(t.tip("main"), Some(s1_tip));
    assert_eq!(t.head(), "main");
    assert_eq!(outcome.deleted.len(), 2);
    assert!(repo.stale_task_branches(None).unwrap().is_empty());
    assert_eq!(t.read("s1.txt").as_deref(), Some("2\n"));
}

/// A task branch on main started with `files`, open.
fn started(name: &str, files: &[(&str, &str)]) -> (TempRepo, git::Repo, TaskBranch) {
    let t = TempRepo::with(name, files);
    let repo = t.open();
    let (branch, _) = repo.start_task_branch("s1").unwrap();
    (t, repo, branch)
}

const LONG: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n";

#[test]
fn changes_cover_committed_staged_unstaged_and_untracked_work() {
    let (t, repo, branch) = started(
        "changes",
        &[
            (".gitignore", "*.log\n"),
            ("committed.txt", "a\n"),
            ("staged-delete.txt", "gone\n"),
            ("old-name.txt", LONG),
            ("image.bin", "\0\x01\x02binary"),
            ("same.txt", "same\n"),
        ],
    );
    t.write("committed.txt", "a changed\n");
    t.commit_all("on the task branch");
    t.remove("staged-delete.txt");
    t.stage("staged-delete.txt");
    std::fs::rename(t.dir.join("old-name.txt"), t.dir.join("new-name.txt")).unwrap();
    t.write("image.bin", "\0\x01\x02other binary");
    t.write("dir/untracked.txt", "new\n");
    t.write("debug.log", "ignored\n");

    let changes = repo.changes(&branch).unwrap();
    let summary: Vec<_> = changes
        .iter()
        .map(|c| (c.path.as_str(), c.status.clone(), c.binary))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("committed.txt", ChangeStatus::Modified, false),
            ("dir/untracked.txt", ChangeStatus::Added, false),
            ("image.bin", ChangeStatus::Modified, true),
            (
                "new-name.txt",
                ChangeStatus::Renamed {
                    from: "old-name.txt".to_string()
                },
                false
            ),
            ("staged-delete.txt", ChangeStatus::Deleted, false),
        ]
    );
    let by_path = |p: &str| changes.iter().find(|c| c.path == p).unwrap();
    let diff = by_path("committed.txt").diff.as_deref().unwrap();
    assert!(
        diff.contains("-a\n") && diff.contains("+a changed\n"),
        "{diff}"
    );
    assert_eq!(by_path("image.bin").diff, None);
    assert_eq!(by_path("dir/untracked.txt").size_bytes, 4);
    assert_eq!(by_path("staged-delete.txt").size_bytes, 5);
    assert!(
        by_path("dir/untracked.txt")
            .diff
            .as_deref()
            .unwrap()
            .contains("+new")
    );
}

#[test]
fn changed_lines_point_at_the_working_tree_version() {
    let (t, repo, branch) = started("lines", &[("code.rs", LONG)]);
    t.write(
        "code.rs",
        "line 1\nline 2 changed\nline 3\nline 4\ninserted\nline 5\nline 6\nline 8\n",
    );
    t.write("src/new.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    t.write("empty.rs", "");
    let lines = repo.changed_lines(&branch).unwrap();
    assert_eq!(lines["code.rs"], vec![2..=2, 5..=5]);
    assert_eq!(lines["src/new.rs"], vec![1..=3]);
    assert_eq!(lines["empty.rs"], vec![]);
    assert_eq!(lines.len(), 3);
}

#[test]
fn commit_reviewed_commits_kept_files_and_reverts_discarded_ones() {
    let (t, repo, branch) = started(
        "commit",
        &[
            ("keep.txt", "k\n"),
            ("revert.txt", "original\n"),
            ("restore-me.txt", "still needed\n"),
            ("unlisted.txt", "u\n"),
        ],
    );
    t.write("keep.txt", "k changed\n");
    t.write("revert.txt", "debug print\n");
    t.remove("restore-me.txt");
    t.write("unlisted.txt", "u changed\n");
    t.write("new-kept.txt", "feature\n");
    t.write("scratch/junk.txt", "junk\n");

    // An unknown path is refused before anything changes.
    let before = t.worktree();
    let err = repo
        .commit_reviewed(&branch, "msg", &[keep("nope.txt")])
        .unwrap_err();
    assert_eq!(err.files(), ["nope.txt"]);
    assert_eq!(t.worktree(), before);
    let err = repo
        .commit_reviewed(&branch, "msg", &[keep("keep.txt"), discard("keep.txt")])
        .unwrap_err();
    assert_eq!(err.key(), "git.contradictory_review");

    let changes = repo.changes(&branch).unwrap();
    let reviewed = [
        keep("keep.txt"),
        keep("new-kept.txt"),
        discard("revert.txt"),
        discard("restore-me.txt"),
        discard("scratch/junk.txt"),
    ];
    let coverage = git::coverage(&changes, &reviewed);
    assert_eq!(coverage.missing, vec!["unlisted.txt"]);
    assert!(coverage.unknown.is_empty());

    let outcome = repo
        .commit_reviewed(&branch, "task work", &reviewed)
        .unwrap();
    assert_eq!(
        outcome.discarded,
        vec!["restore-me.txt", "revert.txt", "scratch/junk.txt"]
    );
    assert_eq!(
        outcome.kept,
        vec!["keep.txt", "new-kept.txt", "unlisted.txt"]
    );
    let commit = Oid::from_str(outcome.commit.as_deref().unwrap()).unwrap();
    let expected: BTreeMap<String, String> = [
        ("keep.txt", "k changed\n"),
        ("new-kept.txt", "feature\n"),
        ("restore-me.txt", "still needed\n"),
        ("revert.txt", "original\n"),
        ("unlisted.txt", "u changed\n"),
    ]
    .iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    assert_eq!(t.files_of(commit), expected);
    assert_eq!(
        t.worktree(),
        expected,
        "the working tree is what was committed"
    );
    assert!(!t.dir.join("scratch").exists(), "emptied directory pruned");
    assert!(t.status().is_empty(), "{:?}", t.status());
    assert_eq!(t.head(), branch.name);

    let again = repo.commit_reviewed(&branch, "nothing", &[]).unwrap();
    assert_eq!(again.commit, None);
}

#[test]
fn commit_reviewed_undoes_a_discarded_rename() {
    let (t, repo, branch) = started("rename", &[("old.txt", LONG)]);
    std::fs::rename(t.dir.join("old.txt"), t.dir.join("new.txt")).unwrap();
    let outcome = repo
        .commit_reviewed(&branch, "msg", &[discard("new.txt")])
        .unwrap();
    assert_eq!(outcome.commit, None);
    assert_eq!(t.read("old.txt").as_deref(), Some(LONG));
    assert_eq!(t.read("new.txt"), None);
    assert!(t.status().is_empty(), "{:?}", t.status());
}

#[test]
fn prepared_commits_wait_for_review_and_can_be_discarded() {
    let (t, repo, branch) = started("prepare", &[("a.txt", "a\n")]);
    t.write("a.txt", "a changed\n");
    t.write("b.txt", "b\n");
    let head = t.tip(&branch.name).unwrap();

    let prepared = repo.prepare(&branch, "reviewed work", &[]).unwrap();
    assert_eq!(t.tip(&branch.name), Some(head), "no commit yet");
    let staged: Vec<_> = t.status().into_iter().map(|(p, _)| p).collect();
    assert_eq!(staged, vec!["a.txt", "b.txt"]);
    assert!(t.status().iter().all(|(_, s)| {
        git2::Status::from_bits_truncate(*s)
            .intersects(git2::Status::INDEX_NEW | git2::Status::INDEX_MODIFIED)
    }));

    repo.discard_prepared(&branch).unwrap();
    assert!(t.status().iter().all(|(_, s)| {
        git2::Status::from_bits_truncate(*s)
            .intersects(git2::Status::WT_NEW | git2::Status::WT_MODIFIED)
    }));
    assert_eq!(t.read("a.txt").as_deref(), Some("a changed\n"));

    let prepared_again = repo.prepare(&branch, "reviewed work", &[]).unwrap();
    assert_eq!(prepared_again.tree, prepared.tree);
    // An edit after preparing is not part of the commit and stays in the working tree.
    t.write("a.txt", "edited during review\n");
    let outcome = repo.commit_prepared(&branch, &prepared_again).unwrap();
    let commit = Oid::from_str(outcome.commit.as_deref().unwrap()).unwrap();
    assert_eq!(t.files_of(commit)["a.txt"], "a changed\n");
    assert_eq!(t.files_of(commit)["b.txt"], "b\n");
    let commit_message = t.repo.find_commit(commit).unwrap();
    assert_eq!(commit_message.message(), Ok("reviewed work"));
    let status: Vec<_> = t.status().into_iter().map(|(p, _)| p).collect();
    assert_eq!(status, vec!["a.txt"]);

    // Called again, as after a kill that came once it had landed: the same commit, not a
    // second one and not a refusal.
    let again = repo.commit_prepared(&branch, &prepared_again).unwrap();
    assert_eq!(again.commit, outcome.commit);
    assert_eq!(t.tip(&branch.name), Some(commit));

    // HEAD moved past it by another commit: the prepared tree is out of date.
    t.write("c.txt", "c\n");
    t.commit_all("other work");
    let err = repo.commit_prepared(&branch, &prepared_again).unwrap_err();
    assert_eq!(err.key(), "git.prepared_stale", "{err}");
}

#[test]
fn a_reviewed_commit_made_again_is_the_one_that_landed() {
    let (t, repo, branch) = started("commit-again", &[("a.txt", "a\n")]);
    t.write("a.txt", "task\n");
    let first = repo
        .commit_reviewed(&branch, "task", &[keep("a.txt")])
        .unwrap();
    let again = repo
        .commit_reviewed(&branch, "task", &[keep("a.txt")])
        .unwrap();
    assert!(first.commit.is_some());
    assert_eq!(again.commit, first.commit);
    let mut walk = t.repo.revwalk().unwrap();
    walk.push_head().unwrap();
    assert_eq!(walk.count(), 2, "the initial commit and one task commit");
}

#[test]
fn a_merge_checkout_cut_short_by_a_kill_is_done_again() {
    let both_moved = |name: &str| {
        let (t, repo, branch) = started(name, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
        t.write("a.txt", "task\n");
        t.commit_all("task");
        t.switch("main");
        t.write("b.txt", "main moved\n");
        t.write("c.txt", "new on main\n");
        t.commit_all("main");
        t.switch(&branch.name);
        (t, repo, branch)
    };
    // Killed after writing some of the merge's files: `b.txt` is the merge's version,
    // `c.txt` created but not written yet.
    let (t, repo, branch) = both_moved("merge-cut-short");
    t.write("b.txt", "main moved\n");
    t.write("c.txt", "");
    let merged = repo.merge_into_base(&branch).unwrap();
    assert_eq!(merged.kind, MergeKind::MergeCommit);
    assert_eq!(t.head(), "main");
    assert_eq!(t.read("a.txt").as_deref(), Some("task\n"));
    assert_eq!(t.read("c.txt").as_deref(), Some("new on main\n"));
    assert!(t.status().is_empty(), "{:?}", t.status());

    // A file that is neither the task's nor the merge's (nor the start of it) is someone's
    // work: refused, kept.
    let (t, repo, branch) = both_moved("merge-cut-short-edited");
    t.write("b.txt", "main moved\n");
    t.write("a.txt", "the user's edit\n");
    let err = repo.merge_into_base(&branch).unwrap_err();
    assert_eq!(err.key(), "git.uncommitted", "{err}");
    assert_eq!(t.read("a.txt").as_deref(), Some("the user's edit\n"));
    assert_eq!(t.head(), branch.name);
}

#[test]
fn a_merge_that_landed_before_a_kill_is_finished() {
    let (t, repo, branch) = started("merge-again", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    let merged = repo.merge_into_base(&branch).unwrap();
    let recreate = |checkout: bool| {
        let commit = t.repo.find_commit(task_tip).unwrap();
        t.repo.branch(&branch.name, &commit, false).unwrap();
        if checkout {
            t.repo
                .set_head(&format!("refs/heads/{}", branch.name))
                .unwrap();
        }
    };
    // Killed before the task branch was deleted: HEAD is on the base.
    recreate(false);
    assert_eq!(repo.merge_into_base(&branch).unwrap(), merged);
    // Killed before HEAD moved to the base: the base is at the task tip.
    recreate(true);
    assert_eq!(repo.merge_into_base(&branch).unwrap(), merged);
    // Killed before its answer was saved: all done already.
    assert_eq!(repo.merge_into_base(&branch).unwrap(), merged);
    assert_eq!(t.head(), "main");
    assert_eq!(t.tip(&branch.name), None);
    assert_eq!(t.tip("main"), Some(task_tip));
    assert!(t.status().is_empty(), "{:?}", t.status());

    // A merge commit: killed once the base moved to it (its tree checked out), with HEAD
    // still on the task branch.
    let (t, repo, branch) = started("merge-commit-again", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    t.switch("main");
    t.write("b.txt", "main moved\n");
    t.commit_all("main");
    t.switch(&branch.name);
    let merged = repo.merge_into_base(&branch).unwrap();
    assert_eq!(merged.kind, MergeKind::MergeCommit);
    let commit = t.repo.find_commit(task_tip).unwrap();
    t.repo.branch(&branch.name, &commit, false).unwrap();
    t.repo
        .set_head(&format!("refs/heads/{}", branch.name))
        .unwrap();
    assert_eq!(repo.merge_into_base(&branch).unwrap(), merged);
    assert_eq!(t.head(), "main");
    assert_eq!(t.tip(&branch.name), None);
    assert!(t.status().is_empty(), "{:?}", t.status());

    // A base whose newest entry is not this merge: nothing is taken for merged.
    let (t, repo, branch) = started("not-merged", &[("a.txt", "a\n")]);
    t.write("a.txt", "task\n");
    t.commit_all("task");
    t.switch("main");
    let err = repo.merge_into_base(&branch).unwrap_err();
    assert_eq!(err.key(), "git.not_on_task_branch", "{err}");
    assert!(t.tip(&branch.name).is_some());
}

#[test]
fn merge_fast_forwards_when_the_base_did_not_move() {
    let (t, repo, branch) = started("ff", &[("a.txt", "a\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    let outcome = repo.merge_into_base(&branch).unwrap();
    assert_eq!(outcome.kind, MergeKind::FastForward);
    assert_eq!(outcome.commit, task_tip.to_string());
    assert_eq!(t.tip("main"), Some(task_tip));
    assert_eq!(t.head(), "main");
    assert_eq!(t.tip(&branch.name), None, "task branch deleted");
    assert!(t.status().is_empty());
}

#[test]
fn merge_makes_a_merge_commit_when_both_moved() {
    let (t, repo, branch) = started("merge-commit", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    t.switch("main");
    t.write("b.txt", "main moved\n");
    let main_tip = t.commit_all("main");
    t.switch(&branch.name);

    let outcome = repo.merge_into_base(&branch).unwrap();
    assert_eq!(outcome.kind, MergeKind::MergeCommit);
    let merge = t.repo.find_commit(t.tip("main").unwrap()).unwrap();
    assert_eq!(
        merge.parent_ids().collect::<Vec<_>>(),
        vec![main_tip, task_tip]
    );
    assert_eq!(
        merge.message(),
        Ok(format!("Merge {} into main", branch.name).as_str())
    );
    assert_eq!(t.read("a.txt").as_deref(), Some("task\n"));
    assert_eq!(t.read("b.txt").as_deref(), Some("main moved\n"));
    assert_eq!(t.head(), "main");
    assert!(t.status().is_empty());
}

#[test]
fn a_merge_conflict_changes_nothing() {
    let (t, repo, branch) = started("conflict", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    t.switch("main");
    t.write("a.txt", "main\n");
    let main_tip = t.commit_all("main");
    t.switch(&branch.name);
    t.write("ignored.log", "x\n");
    t.write(".git/info/exclude", "*.log\n");
    let before = (t.worktree(), t.status(), t.head());
    let index_before = t.repo.index().unwrap().write_tree().unwrap();

    let err = repo.merge_into_base(&branch).unwrap_err();
    assert!(
        matches!(&err, GitError::MergeConflict { files } if files == &["a.txt"]),
        "{err}"
    );
    assert_eq!((t.worktree(), t.status(), t.head()), before);
    assert_eq!(t.repo.index().unwrap().write_tree().unwrap(), index_before);
    assert_eq!(t.tip("main"), Some(main_tip));
    assert_eq!(t.tip(&branch.name), Some(task_tip));
    assert_eq!(t.repo.state(), git2::RepositoryState::Clean);
}

#[test]
fn merge_refuses_uncommitted_work_and_a_missing_base() {
    let (t, repo, branch) = started("uncommitted", &[("a.txt", "a\n")]);
    t.write("new.txt", "untracked\n");
    let err = repo.merge_into_base(&branch).unwrap_err();
    assert!(
        matches!(&err, GitError::Uncommitted { paths } if paths == &["new.txt"]),
        "{err}"
    );
    t.remove("new.txt");
    t.repo
        .find_branch("main", git2::BranchType::Local)
        .unwrap()
        .delete()
        .unwrap();
    let err = repo.merge_into_base(&branch).unwrap_err();
    assert_eq!(err.key(), "git.base_branch_missing", "{err}");
    assert_eq!(t.head(), branch.name);
}

#[test]
fn deleting_the_task_branch_keeps_uncommitted_work() {
    let (t, repo, branch) = started("delete-task", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    t.write("a.txt", "task\n");
    t.commit_all("task");
    // A change to a file the base checkout must rewrite is refused...
    t.write("a.txt", "uncommitted on top\n");
    let err = repo.delete_task_branch(&branch).unwrap_err();
    assert!(
        matches!(&err, GitError::WouldOverwrite { files } if files == &["a.txt"]),
        "{err}"
    );
    assert_eq!(t.head(), branch.name);
    assert_eq!(t.read("a.txt").as_deref(), Some("uncommitted on top\n"));
    // ...one to a file both branches share is carried onto the base.
    t.write("a.txt", "task\n");
    t.write("b.txt", "carried\n");
    let outcome = repo.delete_task_branch(&branch).unwrap();
    assert!(outcome.checked_out_base);
    assert_eq!(outcome.carried, vec!["b.txt"]);
    assert_eq!(outcome.deleted.unmerged_commits, 1);
    assert_eq!(t.head(), "main");
    assert_eq!(t.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(t.read("b.txt").as_deref(), Some("carried\n"));
    assert_eq!(t.tip(&branch.name), None);
    // Again, as after a kill before its answer was saved: nothing left to do.
    let again = repo.delete_task_branch(&branch).unwrap();
    assert!(!again.checked_out_base);
    assert_eq!(again.deleted.unmerged_commits, 0);
    assert_eq!(t.head(), "main");
}

#[test]
fn a_base_checked_out_in_another_worktree_is_not_moved() {
    let (t, repo, branch) = started("worktree", &[("a.txt", "a\n")]);
    t.write("a.txt", "task\n");
    let task_tip = t.commit_all("task");
    let main_tip = t.tip("main").unwrap();
    let other = TempDir::at(t.dir.with_extension("other"));
    let main_ref = t.repo.find_reference("refs/heads/main").unwrap();
    t.repo
        .worktree(
            "other",
            &other,
            Some(git2::WorktreeAddOptions::new().reference(Some(&main_ref))),
        )
        .unwrap();

    let err = repo.merge_into_base(&branch).unwrap_err();
    assert_eq!(err.key(), "git.checked_out_elsewhere", "{err}");
    let err = repo.delete_task_branch(&branch).unwrap_err();
    assert_eq!(err.key(), "git.checked_out_elsewhere", "{err}");
    assert_eq!(t.tip("main"), Some(main_tip));
    assert_eq!(t.tip(&branch.name), Some(task_tip));
    assert_eq!(t.head(), branch.name);

    // From the linked worktree, the main one's branch counts as checked out elsewhere.
    let linked = git::open(&other).unwrap();
    let (other_branch, _) = linked.start_task_branch("s2").unwrap();
    t.switch("main");
    let err = linked.delete_task_branch(&other_branch).unwrap_err();
    assert_eq!(err.key(), "git.checked_out_elsewhere", "{err}");
    let _ = std::fs::remove_dir_all(&other);
}

/// The user's uncommitted work from before the session, left alone, is not the task's:
/// not among its changes, not committed, and carried through the merge as it was, a
/// fast-forward or a merge commit alike. Personal files are never the task's at all.
#[test]
fn work_left_alone_is_not_committed_and_survives_the_merge() {
    for base_moves in [false, true] {
        let name = if base_moves {
            "left-alone-merge"
        } else {
            "left-alone-ff"
        };
        let t = TempRepo::with(
            name,
            &[("a.txt", "a\n"), ("notes.txt", "n\n"), ("b.txt", "b\n")],
        );
        t.write("notes.txt", "n\nthe user's edit\n");
        t.write("user.txt", "the user's new file\n");
        let (branch, carried) = t.open().start_task_branch("s1").unwrap();
        assert_eq!(carried, vec!["notes.txt", "user.txt"]);
        let repo = t
            .open()
            .leaving(["notes.txt".to_string(), "user.txt".to_string()]);
        t.write("a.txt", "task\n");
        t.write(".claude/settings.local.json", "{}\n");
        let paths: Vec<String> = repo
            .changes(&branch)
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(paths, vec!["a.txt"]);
        let done = repo
            .commit_reviewed(&branch, "task", &[keep("a.txt")])
            .unwrap();
        assert_eq!(done.kept, vec!["a.txt"]);
        if base_moves {
            // main moves on (b.txt) without a checkout, which would touch the user's files.
            let parent = t.repo.find_commit(t.tip("main").unwrap()).unwrap();
            let blob = t.repo.blob(b"main moved\n").unwrap();
            let mut tree = t.repo.treebuilder(Some(&parent.tree().unwrap())).unwrap();
            tree.insert("b.txt", blob, 0o100644).unwrap();
            let tree = t.repo.find_tree(tree.write().unwrap()).unwrap();
            let sig = Signature::now("Test", "test@example.com").unwrap();
            t.repo
                .commit(
                    Some("refs/heads/main"),
                    &sig,
                    &sig,
                    "main",
                    &tree,
                    &[&parent],
                )
                .unwrap();
        }
        let merged = repo.merge_into_base(&branch).unwrap();
        let kind = if base_moves {
            MergeKind::MergeCommit
        } else {
            MergeKind::FastForward
        };
        assert_eq!(merged.kind, kind, "{name}");
        assert_eq!(t.head(), "main");
        assert_eq!(t.read("a.txt").as_deref(), Some("task\n"));
        assert_eq!(t.read("notes.txt").as_deref(), Some("n\nthe user's edit\n"));
        assert_eq!(t.read("user.txt").as_deref(), Some("the user's new file\n"));
        let b = if base_moves { "main moved\n" } else { "b\n" };
        assert_eq!(t.read("b.txt").as_deref(), Some(b), "{name}");
        let head = t.repo.head().unwrap().peel_to_tree().unwrap();
        assert!(
            head.get_path(Path::new("user.txt")).is_err(),
            "{name}: user.txt committed"
        );
        assert!(
            head.get_path(Path::new(".claude/settings.local.json"))
                .is_err()
        );
        let notes = head.get_path(Path::new("notes.txt")).unwrap();
        let blob = t.repo.find_blob(notes.id()).unwrap();
        assert_eq!(
            blob.content(),
            b"n\n",
            "{name}: the user's edit was committed"
        );
    }

    // Without being left alone, the same work stops the merge, as before.
    let t = TempRepo::with("left-alone-not", &[("a.txt", "a\n"), ("notes.txt", "n\n")]);
    t.write("notes.txt", "n\nthe user's edit\n");
    let (branch, _) = t.open().start_task_branch("s1").unwrap();
    let err = t.open().merge_into_base(&branch).unwrap_err();
    assert_eq!(err.key(), "git.uncommitted", "{err}");
}

/// `init` keeps the personal files out of git on this machine, once.
#[test]
fn personal_files_are_excluded_once() {
    let t = TempRepo::with("exclude", &[("a.txt", "a\n")]);
    let added = git::exclude_personal_files(&t.dir).unwrap();
    assert_eq!(
        added,
        git::Excluded::Added(vec![
            "/.claude/settings.local.json".to_string(),
            "/CLAUDE.local.md".to_string()
        ])
    );
    assert_eq!(
        git::exclude_personal_files(&t.dir).unwrap(),
        git::Excluded::AlreadyListed
    );
    t.write(".claude/settings.local.json", "{}\n");
    assert!(t.status().is_empty(), "{:?}", t.status());
    let outside = temp_dir("exclude-outside");
    assert_eq!(
        git::exclude_personal_files(&outside).unwrap(),
        git::Excluded::NoRepository
    );
}

/// A rename never pairs a left-alone path with a task's one: each side stands on its own,
/// so neither hides the other's change nor drags the user's work into the commit.
#[test]
fn a_rename_never_pairs_the_users_work_with_the_tasks() {
    let body = "line one\nline two\nline three\nline four\nline five\n";
    // The user's untracked copy of t.txt, left alone; the task deletes t.txt.
    let t = TempRepo::with("rename-new-side", &[("a.txt", "a\n"), ("t.txt", body)]);
    t.write("u.txt", body);
    let (branch, _) = t.open().start_task_branch("s1").unwrap();
    let repo = t.open().leaving(["u.txt".to_string()]);
    t.remove("t.txt");
    t.write("a.txt", "task\n");
    let changes: Vec<(String, ChangeStatus)> = repo
        .changes(&branch)
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.status))
        .collect();
    assert_eq!(
        changes,
        vec![
            ("a.txt".to_string(), ChangeStatus::Modified),
            ("t.txt".to_string(), ChangeStatus::Deleted)
        ]
    );
    repo.commit_reviewed(&branch, "task", &[keep("a.txt"), keep("t.txt")])
        .unwrap();
    let merged = repo.merge_into_base(&branch).unwrap();
    assert_eq!(merged.kind, MergeKind::FastForward);
    assert_eq!(t.read("u.txt").as_deref(), Some(body));

    // The user deleted t.txt before the session, left alone; the task adds a copy of it.
    let t = TempRepo::with("rename-old-side", &[("a.txt", "a\n"), ("t.txt", body)]);
    t.remove("t.txt");
    let (branch, _) = t.open().start_task_branch("s1").unwrap();
    let repo = t.open().leaving(["t.txt".to_string()]);
    t.write("z.txt", body);
    let changes: Vec<(String, ChangeStatus)> = repo
        .changes(&branch)
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.status))
        .collect();
    assert_eq!(changes, vec![("z.txt".to_string(), ChangeStatus::Added)]);
    repo.commit_reviewed(&branch, "task", &[keep("z.txt")])
        .unwrap();
    let head = t.repo.head().unwrap().peel_to_tree().unwrap();
    assert!(
        head.get_path(Path::new("t.txt")).is_ok(),
        "the user's deletion was committed with the task"
    );
    assert_eq!(t.read("t.txt"), None, "the user's deletion was undone");
}

/// The user's git settings that would stop or change a session's commits — signing with a
/// gpg that fails, hooks that refuse, no identity — do not: the session's commits and
/// merges are made by libgit2, which signs nothing and runs no hook (a decision, see
/// docs/testing.md). The settings are the repository's own here; a user's global ones are
/// read the same way.
#[test]
fn the_users_signing_hooks_and_missing_identity_do_not_stop_a_sessions_commit_or_merge() {
    let (t, repo, branch) = started("lived-in", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let hooks = t.dir.join(".git/refusing-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let ran = t.dir.join(".git/a-hook-ran");
    for hook in [
        "pre-commit",
        "commit-msg",
        "post-commit",
        "pre-merge-commit",
    ] {
        let script = format!("#!/bin/sh\ntouch '{}'\nexit 1\n", ran.display());
        std::fs::write(hooks.join(hook), script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(hooks.join(hook), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut config = t.repo.config().unwrap();
    config.set_bool("commit.gpgsign", true).unwrap();
    config.set_str("gpg.program", "/bin/false").unwrap();
    config
        .set_str("core.hooksPath", hooks.to_str().unwrap())
        .unwrap();
    config.remove("user.name").unwrap();
    config.remove("user.email").unwrap();
    // Whose name the commits carry: the user's global identity when this machine has one
    // (libgit2 reads it as git does), else code-intel's own.
    let author = t
        .repo
        .signature()
        .map_or("code-intel".to_string(), |s| s.name().unwrap().to_string());

    t.write("a.txt", "task\n");
    repo.commit_reviewed(&branch, "task work", &[keep("a.txt")])
        .unwrap();
    let task_commit = t.repo.find_commit(t.tip(&branch.name).unwrap()).unwrap();
    assert_eq!(task_commit.author().name().ok(), Some(author.as_str()));
    assert!(task_commit.header_field_bytes("gpgsig").is_err(), "signed");

    t.switch("main");
    t.write("b.txt", "main moved\n");
    t.commit_all("main");
    t.switch(&branch.name);
    let merged = repo.merge_into_base(&branch).unwrap();
    assert_eq!(merged.kind, MergeKind::MergeCommit);
    let merge = t.repo.find_commit(t.tip("main").unwrap()).unwrap();
    assert_eq!(merge.committer().name().ok(), Some(author.as_str()));
    assert!(merge.header_field_bytes("gpgsig").is_err(), "signed");
    assert!(!ran.exists(), "a hook of the user's ran");
    assert_eq!(t.read("a.txt").as_deref(), Some("task\n"));
    assert_eq!(t.read("b.txt").as_deref(), Some("main moved\n"));
}
