#!/usr/bin/env bash
# tests/lived-in/run.sh [CARGO TEST ARGS...]
#
# Runs the test suite again as it runs on the machine of someone who uses code-intel, to
# show that nothing of that machine reaches a test (tests/integration/sealed.rs). It makes
# a lived-in home under target/lived-in and runs `cargo test` with it as HOME:
#
#   - `code-intel model install` done (the model and ONNX Runtime in ~/.cache/code-intel),
#     and the variables tests/model/fetch.sh tells a user to export
#     (CODE_INTEL_ORT_DYLIB, CODE_INTEL_EMBEDDING_MODEL_PATH) exported;
#   - XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_STATE_HOME and XDG_DATA_HOME set;
#   - a global git configuration that signs every commit and tag (with a gpg that always
#     fails), runs a failing hook from core.hooksPath, names `trunk` the default branch,
#     sets no user.name or user.email, ignores files globally (core.excludesFile), and
#     colours, un-prefixes diffs and hides untracked files in git's own output;
#   - ~/.multiverse with a workspace of a real project, a corrupt recent-workspaces list,
#     and that workspace's daemon running (`multiverse serve`) for the whole run;
#   - user-level Claude Code and Codex settings (~/.claude/settings.json,
#     ~/.codex/config.toml) with hooks that fail, a model provider that does not answer,
#     and an MCP server that does not exist;
#   - LANG and LC_ALL ja_JP.UTF-8; the projects' own variables set to values that would
#     change answers (CODE_INTEL_CACHE_DIR, CODE_INTEL_STATE_DIR, CODE_INTEL_WATCH=0,
#     CODE_INTEL_EMBEDDING_URL, CODE_INTEL_LOG, MULTIVERSE_WORKSPACE, MULTIVERSE_IDE_DIR,
#     MULTIVERSE_LOG, AGENT_RUNNER_LOG, RUST_LOG), DOCKER_HOST naming a daemon that is not
#     there, provider keys (OPENAI_API_KEY, ANTHROPIC_API_KEY), colour forced on.
#
# `.ci/run` runs it after the normal pass. Needs the normal pass's setup (target/model,
# the venvs, node_modules, a Docker daemon on the default socket) and PyPI for the model
# install (its downloads are kept in target/lived-in, so a second run reads them again).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
LIVED=$ROOT/target/lived-in
H=$LIVED/home

step() { printf '== lived-in: %s\n' "$*"; }

# cargo and rustup find their homes through HOME unless told: keep the real ones.
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}

step "a home at $H"
# The model cache survives between runs (a download of ~110 MB); the rest is made anew.
mkdir -p "$H/.cache"
find "$H" -mindepth 1 -maxdepth 1 ! -name .cache -exec rm -rf {} +
mkdir -p "$H/.config" "$H/.local/state" "$H/.local/share" "$H/bin"

step "code-intel model install (the README's step) into $H/.cache/code-intel"
cargo build --quiet --locked --bin code-intel --bin multiverse --bin agent-runner
HOME=$H XDG_CACHE_HOME= CODE_INTEL_CACHE_DIR= target/debug/code-intel model install >"$LIVED/model-install.log" 2>&1 \
    || { tail -20 "$LIVED/model-install.log"; exit 1; }
HOME=$H target/debug/code-intel model status --root "$ROOT" 2>&1 | sed 's/^/   /' | head -5

step "a global git configuration that signs, hooks and branches differently"
cat >"$H/bin/gpg-that-fails" <<'EOF'
#!/bin/sh
echo "lived-in: no secret key" >&2
exit 2
EOF
mkdir -p "$H/git-hooks"
for hook in pre-commit commit-msg pre-push post-checkout pre-merge-commit; do
    printf '#!/bin/sh\necho "lived-in: the user'"'"'s %s hook refuses" >&2\nexit 1\n' "$hook" \
        >"$H/git-hooks/$hook"
done
chmod +x "$H/bin/gpg-that-fails" "$H"/git-hooks/*
cat >"$H/.gitconfig" <<EOF
[commit]
	gpgsign = true
[tag]
	gpgsign = true
[gpg]
	program = $H/bin/gpg-that-fails
[core]
	hooksPath = $H/git-hooks
	excludesFile = $H/.gitignore_global
	autocrlf = input
[init]
	defaultBranch = trunk
[pull]
	rebase = true
[color]
	ui = always
[diff]
	noprefix = true
[status]
	showUntrackedFiles = no
EOF
# A global ignore file as many people have one.
printf '%s\n' .DS_Store '*.swp' '*.log' .env .idea/ .vscode/ node_modules/ __pycache__/ \
    '*.pyc' dist/ build/ >"$H/.gitignore_global"

step "~/.multiverse: a workspace, a corrupt recent list, and its daemon"
PROJECT=$LIVED/project
rm -rf "$PROJECT"
mkdir -p "$PROJECT"
git -C "$PROJECT" -c init.defaultBranch=main init -q
echo "a project of the user's" >"$PROJECT/README.md"
git -C "$PROJECT" add README.md
git -C "$PROJECT" -c user.name=u -c user.email=u@example.com -c commit.gpgsign=false \
    -c core.hooksPath=/dev/null commit -q -m init
HOME=$H target/debug/multiverse --workspace "$H/.multiverse/workspaces/project" init \
    --planner mock --worker-command /bin/true --unsafe-local \
    --agent-runner "$ROOT/target/debug/agent-runner" "$PROJECT" >/dev/null
HOME=$H setsid target/debug/multiverse --workspace "$H/.multiverse/workspaces/project" serve \
    >"$LIVED/daemon.log" 2>&1 </dev/null &
DAEMON=$!
trap 'kill "$DAEMON" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    grep -q 'serving http' "$LIVED/daemon.log" 2>/dev/null && break
    sleep 0.2
done
grep -q 'serving http' "$LIVED/daemon.log" || { cat "$LIVED/daemon.log"; exit 1; }
# Corrupt after the daemon started (it rewrote the list when it opened its workspace).
printf '{"version": 1, "workspaces": [ {"dir": ' >"$H/.multiverse/workspaces.json"

step "user-level Claude Code and Codex settings"
mkdir -p "$H/.claude" "$H/.codex"
cat >"$H/.claude/settings.json" <<'EOF'
{
  "model": "claude-lived-in-does-not-exist",
  "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
  "permissions": {"deny": ["Bash(*)", "Write(*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "exit 2"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "exit 2"}]}]
  }
}
EOF
cat >"$H/.claude.json" <<'EOF'
{"mcpServers": {"lived-in": {"command": "/nonexistent/mcp-server"}}}
EOF
cat >"$H/.codex/config.toml" <<'EOF'
model = "gpt-lived-in"
model_provider = "lived-in"

[model_providers.lived-in]
name = "lived-in"
base_url = "http://127.0.0.1:9/v1"
env_key = "OPENAI_API_KEY"

[mcp_servers.lived-in]
command = "/nonexistent/mcp-server"

[[hooks.PreToolUse]]
matcher = ".*"
hooks = [{ type = "command", command = "exit 2" }]
EOF

step "the variables of a machine that uses code-intel"
export HOME=$H
export XDG_CONFIG_HOME=$H/.config XDG_CACHE_HOME=$H/.cache XDG_STATE_HOME=$H/.local/state
export XDG_DATA_HOME=$H/.local/share
# What tests/model/fetch.sh tells its user to export.
export CODE_INTEL_ORT_DYLIB=$ROOT/target/model/libonnxruntime.so
export CODE_INTEL_EMBEDDING_MODEL_PATH=$ROOT/target/model/all-minilm-l6-v2
export CODE_INTEL_STATE_DIR=$H/code-intel-state CODE_INTEL_WATCH=0 CODE_INTEL_LOG=trace
export CODE_INTEL_EMBEDDING_URL=http://127.0.0.1:9/v1 CODE_INTEL_EMBEDDING_ENDPOINT_MODEL=lived-in
export MULTIVERSE_WORKSPACE=$H/.multiverse/workspaces/project MULTIVERSE_IDE_DIR=/nonexistent
export MULTIVERSE_LOG=trace AGENT_RUNNER_LOG=trace RUST_LOG=trace
export DOCKER_HOST=tcp://127.0.0.1:9
export OPENAI_API_KEY=sk-lived-in ANTHROPIC_API_KEY=sk-ant-lived-in
export CLICOLOR_FORCE=1 TERM=xterm-256color
unset NO_COLOR
# After the fetch script's variables: CODE_INTEL_CACHE_DIR would hide the installed model.
export CODE_INTEL_CACHE_DIR=$H/.cache/code-intel

step "cargo test $* (the README's test command, in the lived-in home)"
started=$(date +%s)
# The locale for cargo and the tests only (this shell would warn when the machine has
# no ja_JP locale installed; the tests see the variables either way).
LANG=ja_JP.UTF-8 LC_ALL=ja_JP.UTF-8 cargo test --locked "$@"
step "passed in $(($(date +%s) - started)) s"
