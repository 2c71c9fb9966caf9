//! The IDE's JavaScript units (`tests/ide/*.test.mjs`: the graph layout, the Markdown
//! parser, the panels' pure parts) run with Node's own test runner, so `cargo test` runs
//! them too; Node is on every machine `.ci/run` prepares (it installs the npm test
//! clients with it).

use std::path::Path;

#[test]
fn the_ides_javascript_units_pass_under_node() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ide");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests in {}", dir.display());
    let o = crate::sealed::command("node")
        .arg("--test")
        // One file at a time: the Markdown parser's growth checks time their inputs, and
        // the other files running beside them would only add noise.
        .arg("--test-concurrency=1")
        .args(&files)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("node (20 or later) is needed for the IDE's JavaScript tests");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "node --test failed:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Each file ran: its tests are in the report, none skipped as empty.
    let passed = out
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed >= files.len() as u32, "{passed} passed:\n{out}");
}
