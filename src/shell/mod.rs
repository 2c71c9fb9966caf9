//! What a shell command plainly writes, for the hook on Claude Code's `Bash` tool and
//! Codex's shell tool (which Codex also names `Bash` in hook input). Pure: text in, data
//! out, and host-neutral (it uses no other module), so the clients' hook scans with it and
//! the server's write rule (`server::write_rule`) judges and words what it found.
//!
//! This is an earlier, friendlier refusal, not the guarantee: the server compares the
//! working tree at every submission whatever wrote to it (`server::worktree`). The scanner
//! reads the command the way a POSIX shell splits it (quotes, escapes, `$(...)`,
//! backticks, heredocs, `;`/`&&`/`||`/`|`, subshells, `cd`) and reports:
//!
//! - the files written by output redirections (`>`, `>>`, `>|`, `&>`, `<>`, `>&FILE`;
//!   `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/N` are not files),
//!   `tee`, `sed -i`, `perl -i`, `mv`, `cp`/`install`/`ln`/`rsync` (their destination),
//!   `rm`, `rmdir`, `touch`, `mkdir`, `truncate`, `chmod`/`chown`/`chgrp`, `shred`,
//!   `unlink`, `dd of=`, `curl -o`, `wget -O`, `find -fprint`, and `git checkout -- FILES`
//!   / `git restore FILES`;
//! - writes whose files it cannot name: a target with `$VAR`, a glob or `~`, `git` with
//!   any subcommand that is not read-only (commit, switch, reset, stash, config, add, ...),
//!   `find -delete`, `patch`, `tar -x`, `unzip`, a writer run by `xargs` or `find -exec`;
//! - writes of files the program chooses (`cargo fmt`, `black`, `ruff format`, `prettier
//!   --write`, `gofmt -w`, `eslint --fix`, `go generate`, ...; not their `--check` forms);
//! - a command it cannot read (an unterminated quote, longer than [`MAX_COMMAND_BYTES`],
//!   nested `bash -c` deeper than [`MAX_DEPTH`]).
//!
//! Everything else passes: `cat`, `grep`, `ls`, `git status`/`diff`/`log`, builds and test
//! runs (their output is theirs to write), and scripts (`python -c`, `node -e`), which no
//! scanner can judge. One pass over the text, so the cost is linear in its length.
//!
//! [`lex`] splits the text into simple commands, [`analyse`] judges each one (with
//! [`git`]'s subcommands in a file of their own), [`args`] reads their words, and
//! [`writes`] holds what a scan finds.

mod analyse;
mod args;
mod git;
mod lex;
mod writes;

pub use analyse::MAX_DEPTH;
pub use writes::{DESCRIPTIONS, Described, Scan, Write, WriteKind};

/// Longer commands are not scanned: judged as unreadable instead.
pub const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// Scans one command line (or script).
pub fn scan(command: &str) -> Scan {
    let mut out = Scan::default();
    if command.len() > MAX_COMMAND_BYTES {
        out.unparsed = Some(Described::new(
            "hook.unreadable.too_long",
            command.len().to_string(),
        ));
        return out;
    }
    let mut cwd = Some(String::new());
    analyse::scan_into(command, 0, &mut cwd, &mut out);
    let mut seen = std::collections::BTreeSet::new();
    out.writes.retain(|w| seen.insert(w.clone()));
    let mut seen = std::collections::BTreeSet::new();
    out.opaque.retain(|o| seen.insert(o.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (command, files written, opaque writes, unparsed)
    const TABLE: &[(&str, &[&str], usize, bool)] = &[
        // Read-only commands.
        ("cat src/a.py", &[], 0, false),
        ("grep -rn 'x > y' src | head -5", &[], 0, false),
        (
            "ls -la && git status && git diff HEAD -- src/a.py",
            &[],
            0,
            false,
        ),
        ("git log --oneline -5 2>/dev/null", &[], 0, false),
        ("cargo test > /dev/null 2>&1", &[], 0, false),
        ("echo hi >&2; echo 2>&1", &[], 0, false),
        ("make 2>/dev/null >/dev/null &>/dev/null", &[], 0, false),
        ("git branch", &[], 0, false),
        ("git branch -a --list", &[], 0, false),
        ("git config --get user.name", &[], 0, false),
        ("sed -n 1,10p src/a.py", &[], 0, false),
        ("python -c 'open(\"x\",\"w\")'", &[], 0, false),
        ("echo '> not a redirection' \"| nor a pipe\"", &[], 0, false),
        ("# echo hi > x\nls", &[], 0, false),
        ("cat <<'EOF'\nx > y\nrm z\nEOF\nls", &[], 0, false),
        ("cat <<-EOF | wc -l\n\tline > file\n\tEOF\n", &[], 0, false),
        ("echo $((1 > 2))", &[], 0, false),
        ("diff <(sort a) <(sort b)", &[], 0, false),
        ("FOO=1 BAR=2 env -u X printenv", &[], 0, false),
        // Redirections.
        ("echo hi > src/a.py", &["src/a.py"], 0, false),
        ("echo hi>>notes.txt", &["notes.txt"], 0, false),
        ("cmd &> out.log", &["out.log"], 0, false),
        ("cmd >| forced 2>err.txt", &["forced", "err.txt"], 0, false),
        ("cmd >&both.txt", &["both.txt"], 0, false),
        ("exec 3<> rw.txt", &["rw.txt"], 0, false),
        (
            "echo \"a b\" > 'with space.txt'",
            &["with space.txt"],
            0,
            false,
        ),
        ("echo x > $OUT", &[], 1, false),
        ("echo x > ~/x", &[], 1, false),
        ("echo x > *.py", &[], 1, false),
        ("(cd sub && echo x > y.txt)", &["sub/y.txt"], 0, false),
        ("(cd sub; touch a); touch b", &["sub/a", "b"], 0, false),
        (
            "cd d && (touch a; cd e; touch b) && touch c",
            &["d/a", "d/e/b", "d/c"],
            0,
            false,
        ),
        ("echo $(cd /tmp; pwd) > out", &["out"], 0, false),
        ("cd \"$DIR\" && echo x > y", &[], 1, false),
        ("echo $(echo inner > inner.txt)", &["inner.txt"], 0, false),
        ("echo \"`touch tick`\"", &["tick"], 0, false),
        // Writers.
        ("tee -a log.txt < in", &["log.txt"], 0, false),
        ("ls | tee out1 out2 >/dev/null", &["out1", "out2"], 0, false),
        (
            "sed -i 's/a/b/' src/a.py src/b.py",
            &["src/a.py", "src/b.py"],
            0,
            false,
        ),
        ("sed -i.bak -e 's/a/b/' f.txt", &["f.txt"], 0, false),
        ("sed --in-place=.orig 's/x/y/' g.txt", &["g.txt"], 0, false),
        ("perl -pi -e 's/a/b/' p.txt", &["p.txt"], 0, false),
        ("mv a.txt b.txt", &["a.txt", "b.txt"], 0, false),
        ("cp -r src/a.py /tmp/x dest/", &["dest/"], 0, false),
        ("cp -t dest a b", &["dest"], 0, false),
        (
            "rm -rf build/ src/old.py",
            &["build/", "src/old.py"],
            0,
            false,
        ),
        (
            "touch new.rs && mkdir -p src/new",
            &["new.rs", "src/new"],
            0,
            false,
        ),
        ("ln -s ../target link", &["link"], 0, false),
        ("truncate -s 0 big.log", &["big.log"], 0, false),
        ("chmod +x run.sh", &["run.sh"], 0, false),
        (
            "dd if=/dev/zero of=disk.img bs=1 count=1",
            &["disk.img"],
            0,
            false,
        ),
        ("curl -sS -o page.html https://x", &["page.html"], 0, false),
        ("sudo -u root rm x", &["x"], 0, false),
        ("timeout 5 touch t", &["t"], 0, false),
        ("find . -name '*.pyc' -delete", &[], 1, false),
        ("find . -name '*.tmp' -exec rm {} \\;", &[], 1, false),
        ("ls | xargs rm", &[], 1, false),
        ("bash -c 'echo x > nested.txt'", &["nested.txt"], 0, false),
        ("sh -c \"cd d && touch e\"", &["d/e"], 0, false),
        ("eval 'echo hi > ev.txt'", &["ev.txt"], 0, false),
        ("tar xzf a.tgz", &[], 1, false),
        ("cat a | sponge a", &["a"], 0, false),
        ("gawk -i inplace '{print}' f.txt", &["f.txt"], 0, false),
        ("awk '{print}' f.txt > /dev/null", &[], 0, false),
        // Git.
        (
            "git checkout -- src/a.py src/b.py",
            &["src/a.py", "src/b.py"],
            0,
            false,
        ),
        ("git checkout HEAD -- src/a.py", &["src/a.py"], 0, false),
        ("git restore --staged src/a.py", &["src/a.py"], 0, false),
        ("git -C sub restore f", &["sub/f"], 0, false),
        ("git checkout main", &[], 1, false),
        ("git commit -am wip", &[], 1, false),
        ("git -c core.x=y reset --hard", &[], 1, false),
        ("git config user.name x", &[], 1, false),
        ("git stash", &[], 1, false),
        ("git branch -D old", &[], 1, false),
        ("git add .", &[], 1, false),
        ("git --git-dir=/x/.git log", &[], 1, false),
        (
            "echo x > .git/hooks/pre-commit",
            &[".git/hooks/pre-commit"],
            0,
            false,
        ),
        // Unreadable.
        ("echo 'unterminated > x", &[], 0, true),
        ("echo \"open", &[], 0, true),
        ("echo $(ls", &[], 0, true),
        ("echo >", &[], 0, true),
    ];

    #[test]
    fn the_table() {
        for (command, files, opaque, unparsed) in TABLE {
            let scan = scan(command);
            let written: Vec<&str> = scan.writes.iter().map(|w| w.path.as_str()).collect();
            assert_eq!(&written, files, "files of {command:?}: {scan:?}");
            assert_eq!(
                scan.opaque.len(),
                *opaque,
                "opaque writes of {command:?}: {scan:?}"
            );
            assert_eq!(
                scan.unparsed.is_some(),
                *unparsed,
                "unparsed {command:?}: {scan:?}"
            );
        }
        assert!(
            scan("mkdir -p a/b")
                .writes
                .iter()
                .all(|w| w.kind == WriteKind::Dir)
        );
        let kinds = |c: &str| scan(c).writes.iter().map(|w| w.kind).collect::<Vec<_>>();
        assert_eq!(kinds("git checkout -- a b"), [WriteKind::FromHead; 2]);
        assert_eq!(
            kinds("rm -rf __pycache__ .pytest_cache"),
            [WriteKind::Remove; 2]
        );
        assert_eq!(kinds("unlink a"), [WriteKind::Remove]);
        assert_eq!(kinds("git checkout HEAD -- a"), [WriteKind::FromHead]);
        assert_eq!(kinds("git restore --source=HEAD a"), [WriteKind::FromHead]);
        assert_eq!(kinds("git checkout main -- a"), [WriteKind::File]);
        assert_eq!(kinds("git restore -s HEAD~1 a"), [WriteKind::File]);
        assert!(scan("cat x").is_read_only());
    }

    #[test]
    fn formatters_rewrite_what_they_choose() {
        for command in [
            "cargo fmt",
            "cargo fmt --all",
            "cargo clippy --fix --allow-dirty",
            "rustfmt src/main.rs",
            "black .",
            "ruff format src",
            "ruff check --fix",
            "prettier --write 'src/**/*.ts'",
            "gofmt -w .",
            "go generate ./...",
            "npx eslint --fix src",
        ] {
            let found = scan(command);
            assert_eq!(found.broad.len(), 1, "{command}: {found:?}");
            assert!(!found.is_read_only());
        }
        for command in [
            "cargo fmt --check",
            "cargo clippy --all-targets -- -D warnings",
            "cargo test",
            "rustfmt --check src/main.rs",
            "black --check .",
            "ruff check src",
            "prettier --check src",
            "gofmt -l .",
            "go test ./...",
        ] {
            assert!(
                scan(command).is_read_only(),
                "{command}: {:?}",
                scan(command)
            );
        }
    }

    #[test]
    fn depth_and_size_are_bounded() {
        assert!(scan("eval eval eval ls").is_read_only());
        let nested = "eval eval eval eval ls";
        assert!(scan(nested).unparsed.is_some(), "{:?}", scan(nested));
        let huge = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert!(scan(&huge).unparsed.is_some());
        // Long but under the cap: linear, so this is quick.
        let long = "echo a > f; ".repeat(20_000);
        let started = std::time::Instant::now();
        let result = scan(&long);
        assert_eq!(result.writes.len(), 1);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let parens = "$(".repeat(10_000);
        assert!(scan(&parens).unparsed.is_some());
    }
}
