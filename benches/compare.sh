#!/usr/bin/env bash
# Compares code-intel's code-intelligence commands with the reference tools, measured in the
# same run on the same machine, and prints ratios against the goals of issue 3:
#
#   search      `code-intel search --limit 0` vs `rg -n --no-heading` (literal, regex,
#               case-insensitive whole word), both writing to /dev/null: goal <= 1.0x rg,
#               the current ripgrep release built from crates.io (not a distribution's
#               older package).
#               rg gets --no-require-git, as code-intel honours .gitignore files outside
#               git repositories too; each query first checks that both print the same
#               number of lines, and a difference is a note under the table.
#   cold index  `code-intel index` with no .code-intel/ vs `ctags -R -f FILE DIR`
#               (universal-ctags): goal <= 1.0x ctags
#   incremental one source file had a comment line appended (hyperfine --prepare), then
#               `code-intel index` (walks the whole tree), and separately the next
#               `code-intel defs`, which re-tags the changed file before answering: goal < 50 ms
#   defs        warm `code-intel defs NAME` (index up to date): goal < 10 ms at the median
#   noindex     `code-intel defs NAME` on the corpus never indexed (no .code-intel/): it tags
#               only the files that mention the name: goal < 300 ms
#   refs        warm `code-intel refs NAME` (uses are parsed from the files that mention the
#               name, not read from the index): goal < 500 ms; prints the uses by kind and
#               resolution, and the subclasses `impact NAME` finds
#
# on two corpora: Django's source (the PyPI sdist, ~490k lines of Python) and a copy of the
# Rust sources under ~/.cargo/registry/src/*/ (this crate's dependencies).
#
# Run:   bash benches/compare.sh
# Needs: root for `apt-get install` of universal-ctags and hyperfine when missing; cargo and
#        crates.io for ripgrep (`cargo install ripgrep --locked`, once, into $BENCH_DIR/rg);
#        pip (PyPI) for Django; python3 to read hyperfine's JSON.
# Knobs (environment):
#   BENCH_DIR        where corpora and results are cached (default /tmp/code-intel-bench);
#                    delete $BENCH_DIR/django or $BENCH_DIR/cargo-src* to fetch them anew
#   BENCH_CORPORA    which corpora to run (default "django cargo")
#   BENCH_PARTS      which measurements to run (default "search cold incremental defs")
#   BENCH_WARMUP     hyperfine warmup runs (default 3)
#   BENCH_RUNS       timed runs of the fast commands: search, incremental, defs (default 30)
#   BENCH_SLOW_RUNS  timed runs of the cold index and ctags (default 5)
#   BENCH_RESULTS    where this run's hyperfine JSON goes (default $BENCH_DIR/results; it is
#                    emptied first, so two runs sharing a BENCH_DIR need one each)
#   DJANGO_SPEC      the pip requirement for the Django corpus (default django==5.2.19)
#   RG               the ripgrep binary to compare with (default: $BENCH_DIR/rg/bin/rg,
#                    built by `cargo install ripgrep --locked` when missing; delete
#                    $BENCH_DIR/rg to build the newest release again)
#
# Times in the final table are hyperfine medians; ratios are code-intel / reference medians.
# The means, deviations and ranges follow in the details table. This script is not part of
# `cargo test` (Cargo builds only the Rust targets under benches/).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_DIR="${BENCH_DIR:-/tmp/code-intel-bench}"
CORPORA="${BENCH_CORPORA:-django cargo}"
PARTS="${BENCH_PARTS:-search cold incremental defs noindex refs}"
WARMUP="${BENCH_WARMUP:-3}"
RUNS="${BENCH_RUNS:-30}"
SLOW_RUNS="${BENCH_SLOW_RUNS:-5}"
DJANGO_SPEC="${DJANGO_SPEC:-django==5.2.19}"
RG="${RG:-}"
RESULTS="${BENCH_RESULTS:-$BENCH_DIR/results}"
TMP="$BENCH_DIR/tmp"
ROWS="$RESULTS/rows.tsv"

log() { printf '\n== %s\n' "$*"; }

# ---------------------------------------------------------------------------- tools
have_tools() {
    command -v hyperfine >/dev/null &&
        command -v ctags >/dev/null && ctags --version 2>/dev/null | grep 'Universal Ctags' >/dev/null
}

install_tools() {
    if ! have_tools; then
        log "installing universal-ctags and hyperfine"
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y universal-ctags hyperfine; then
            apt-get update
            apt-get install -y universal-ctags hyperfine
        fi
        have_tools || { echo "error: the reference tools are still missing" >&2; exit 2; }
    fi
    # ripgrep: the current release from crates.io, built once and kept in $BENCH_DIR (a
    # distribution's package can be years behind, and rg got faster since).
    if [[ -z $RG ]]; then
        RG="$BENCH_DIR/rg/bin/rg"
        if [[ ! -x $RG ]]; then
            log "building ripgrep from crates.io (cargo install ripgrep --locked)"
            cargo install ripgrep --locked --root "$BENCH_DIR/rg"
        fi
    fi
    command -v "$RG" >/dev/null || { echo "error: no ripgrep at '$RG'" >&2; exit 2; }
}

# ---------------------------------------------------------------------------- corpora
# Each fetches its corpus into $BENCH_DIR once; later runs reuse it.
django_corpus() {
    local dir="$BENCH_DIR/django"
    if [[ ! -f "$BENCH_DIR/django.done" ]]; then
        log "fetching the Django corpus ($DJANGO_SPEC) from PyPI"
        rm -rf "$dir" "$BENCH_DIR/dl"
        mkdir -p "$BENCH_DIR/dl" "$dir"
        python3 -m pip download --quiet --no-deps --no-binary :all: "$DJANGO_SPEC" -d "$BENCH_DIR/dl"
        local sdist
        sdist="$(find "$BENCH_DIR/dl" -maxdepth 1 -iname 'django-*.tar.gz' | sed -n 1p)"
        [[ -n "$sdist" ]] || { echo "error: no Django sdist was downloaded" >&2; exit 2; }
        tar -xzf "$sdist" -C "$dir" --strip-components=1 --no-same-owner
        touch "$BENCH_DIR/django.done"
    fi
}

cargo_corpus() {
    local dir="$BENCH_DIR/cargo-src"
    if [[ ! -f "$BENCH_DIR/cargo-src.done" ]]; then
        log "copying ${CARGO_HOME:-$HOME/.cargo}/registry/src/*/ to $dir"
        rm -rf "$dir"
        mkdir -p "$dir"
        local src found=0
        for src in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/; do
            cp -a "$src." "$dir/"
            found=1
        done
        [[ $found == 1 ]] || { echo "error: no crate sources under ~/.cargo/registry/src" >&2; exit 2; }
        touch "$BENCH_DIR/cargo-src.done"
    fi
}

# Per corpus: directory, the rg type of its main language, the queries, the file to edit
# for the incremental update, the comment prefix, and the name for `defs`.
setup_corpus() {
    case "$1" in
        django)
            django_corpus
            C_DIR="$BENCH_DIR/django"
            C_TYPE=py
            Q_LITERAL="assertEqual"
            Q_REGEX='def \w+\(self, request'
            Q_WORD="model"
            C_EDIT="django/db/models/query.py"
            C_COMMENT="#"
            C_DEF="ModelAdmin"
            C_REF="UserCreationForm"
            ;;
        cargo)
            cargo_corpus
            C_DIR="$BENCH_DIR/cargo-src"
            C_TYPE=rust
            Q_LITERAL="unsafe"
            Q_REGEX='fn \w+<[^>]*>\('
            Q_WORD="error"
            C_EDIT="$(cd "$C_DIR" && { ls -d clap_builder-*/src/builder/command.rs 2>/dev/null ||
                find . -path '*/src/lib.rs' | sed 's|^\./||' | sort; } | sed -n 1p)"
            C_COMMENT="//"
            C_DEF="parse_args"
            C_REF="parse_args"
            ;;
        *)
            echo "error: unknown corpus '$1' (django, cargo)" >&2
            exit 2
            ;;
    esac
    # Restore the edited file if an interrupted run left comment lines in it.
    local pristine="$BENCH_DIR/pristine/$1.orig"
    mkdir -p "$BENCH_DIR/pristine"
    if [[ -f "$pristine" ]]; then
        cmp -s "$pristine" "$C_DIR/$C_EDIT" || cp "$pristine" "$C_DIR/$C_EDIT"
    else
        cp "$C_DIR/$C_EDIT" "$pristine"
    fi
}

corpus_stats() {
    local name="$1" files lines bytes src_files src_lines
    files="$(cd "$C_DIR" && "$RG" --files --no-require-git | wc -l)"
    read -r lines bytes < <(cd "$C_DIR" && "$RG" --files --no-require-git -0 | xargs -0 cat | wc -lc)
    src_files="$(cd "$C_DIR" && "$RG" --files --no-require-git -t "$C_TYPE" | wc -l)"
    src_lines="$(cd "$C_DIR" && "$RG" --files --no-require-git -t "$C_TYPE" -0 | xargs -0 cat | wc -l)"
    printf 'corpus %-7s %s\n  searched files: %s, lines: %s, MiB: %s; %s files: %s, lines: %s\n' \
        "$name" "$C_DIR" "$files" "$lines" "$((bytes / 1048576))" "$C_TYPE" "$src_files" "$src_lines"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$files" "$lines" "$C_TYPE" "$src_files" "$src_lines" \
        >>"$RESULTS/corpora.tsv"
}

# ---------------------------------------------------------------------------- measuring
# hyperfine NAME [hyperfine args...]: exports $RESULTS/NAME.json.
bench() {
    local name="$1"
    shift
    # Other work on the machine skews the numbers: show it.
    echo "  [load average before $name: $(cut -d' ' -f1-3 /proc/loadavg)]"
    hyperfine --style basic --export-json "$RESULTS/$name.json" "$@"
}

# row MEASUREMENT CODE_INTEL_JSON REFERENCE_JSON|- GOAL_KIND GOAL_VALUE NOTE
#   GOAL_KIND: ratio (code-intel/reference median <= value) or ms (median < value)
row() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"
}

count_lines() { "$@" 2>/dev/null | wc -l || true; }

# search_case CORPUS LABEL RG_ARGS... :: CODE_INTEL_ARGS...
search_case() {
    local corpus="$1" label="$2"
    shift 2
    local rg_flags=() ci_flags=()
    while [[ $1 != :: ]]; do rg_flags+=("$1"); shift; done
    shift
    ci_flags=("$@")
    # The same file set: code-intel honours .gitignore outside git repositories too.
    local rg_cmd=("$RG" -n --no-heading --no-require-git "${rg_flags[@]}" "$C_DIR")
    local ci_cmd=("$CODE_INTEL" search --root "$C_DIR" --limit 0 "${ci_flags[@]}")
    local n_rg n_ci note=""
    n_rg="$(count_lines "${rg_cmd[@]}")"
    n_ci="$(count_lines "${ci_cmd[@]}")"
    echo "  $label: rg $n_rg lines, code-intel $n_ci lines"
    if [[ $n_rg != "$n_ci" ]]; then
        note="match counts differ: rg $n_rg, code-intel $n_ci"
        echo "  WARNING: $note"
    fi
    local q_rg q_ci
    q_rg="$(printf '%q ' "${rg_cmd[@]}")"
    q_ci="$(printf '%q ' "${ci_cmd[@]}")"
    bench "$corpus-search-$label" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        -n "rg $label" "$q_rg" -n "code-intel $label" "$q_ci"
    row "$corpus: search $label ($n_ci lines)" "$corpus-search-$label.json#1" \
        "$corpus-search-$label.json#0" ratio 1.0 "$note"
}

measure_search() {
    local corpus="$1"
    log "$corpus: search (rg -n --no-heading vs code-intel search --limit 0)"
    search_case "$corpus" literal -F -- "$Q_LITERAL" :: -- "$Q_LITERAL"
    search_case "$corpus" regex -e "$Q_REGEX" :: --regex -- "$Q_REGEX"
    search_case "$corpus" word-i -i -w -F -- "$Q_WORD" :: -i -w -- "$Q_WORD"
}

measure_cold() {
    local corpus="$1" tags="$TMP/$1.tags"
    log "$corpus: cold index (code-intel index with no .code-intel/ vs ctags -R)"
    rm -rf "$C_DIR/.code-intel"
    echo "  code-intel: $("$CODE_INTEL" index --root "$C_DIR" 2>&1 | tail -n1)"
    ctags -R -f "$tags" "$C_DIR" 2>/dev/null
    echo "  ctags: $(grep -vc '^!_TAG_' "$tags") tags from $(cut -f2 "$tags" | grep -v '^!' | sort -u | wc -l) files"
    bench "$corpus-cold-index" -N --warmup "$WARMUP" --runs "$SLOW_RUNS" --output=null \
        -n "ctags -R" --prepare "rm -f $tags" "ctags -R -f $tags $C_DIR" \
        -n "code-intel index (cold)" --prepare "rm -rf $C_DIR/.code-intel" \
        "$CODE_INTEL index --root $C_DIR"
    row "$corpus: cold index" "$corpus-cold-index.json#1" "$corpus-cold-index.json#0" ratio 1.0 \
        "ctags tags every language it knows, code-intel its eleven; both definitions only"
}

measure_incremental() {
    local corpus="$1" touch_script="$TMP/touch-$1.sh"
    log "$corpus: incremental index after appending a comment line to $C_EDIT"
    "$CODE_INTEL" index --root "$C_DIR" >/dev/null
    # A new line each time, so the content hash changes and the file is re-tagged.
    printf '#!/usr/bin/env bash\nprintf "%s bench %%s\\n" "$(date +%%s%%N)" >> %q\n' \
        "$C_COMMENT" "$C_DIR/$C_EDIT" >"$touch_script"
    bash "$touch_script"
    echo "  code-intel: $("$CODE_INTEL" index --root "$C_DIR" 2>&1 | tail -n1)"
    bench "$corpus-incremental" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        --prepare "bash $touch_script" -n "code-intel index (1 file changed)" \
        "$CODE_INTEL index --root $C_DIR"
    # The same change seen by the next query: `defs` finds the file's stamp moved, re-tags
    # it and writes the delta before answering (what the MCP server does on every query).
    bench "$corpus-incremental-query" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        --prepare "bash $touch_script" -n "code-intel defs (1 file changed)" \
        "$CODE_INTEL defs $C_DEF --root $C_DIR"
    cp "$BENCH_DIR/pristine/$corpus.orig" "$C_DIR/$C_EDIT"
    "$CODE_INTEL" index --root "$C_DIR" >/dev/null
    row "$corpus: incremental, \`index\` (walks the tree)" "$corpus-incremental.json#0" - ms 50 ""
    row "$corpus: incremental, next query re-tags it" "$corpus-incremental-query.json#0" - ms 50 ""
}

measure_defs() {
    local corpus="$1" n_defs
    log "$corpus: warm defs $C_DEF"
    "$CODE_INTEL" index --root "$C_DIR" >/dev/null
    n_defs="$("$CODE_INTEL" defs "$C_DEF" --root "$C_DIR" --limit 0 | wc -l)"
    echo "  $n_defs definitions"
    bench "$corpus-defs" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        -n "code-intel defs $C_DEF" "$CODE_INTEL defs $C_DEF --root $C_DIR"
    row "$corpus: defs $C_DEF ($n_defs defs, warm)" "$corpus-defs.json#0" - ms 10 ""
}

measure_noindex() {
    local corpus="$1"
    log "$corpus: defs $C_DEF with no index (.code-intel/ removed before every run)"
    rm -rf "$C_DIR/.code-intel"
    echo "  $("$CODE_INTEL" defs "$C_DEF" --root "$C_DIR" --limit 0 | wc -l) definitions"
    bench "$corpus-defs-noindex" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        --prepare "rm -rf $C_DIR/.code-intel" -n "code-intel defs $C_DEF (no index)" \
        "$CODE_INTEL defs $C_DEF --root $C_DIR"
    row "$corpus: defs $C_DEF, never indexed" "$corpus-defs-noindex.json#0" - ms 300 ""
}

measure_refs() {
    local corpus="$1"
    log "$corpus: warm refs $C_REF (uses by kind and resolution), impact $C_DEF subclasses"
    "$CODE_INTEL" index --root "$C_DIR" >/dev/null
    "$CODE_INTEL" refs "$C_REF" --root "$C_DIR" --json --limit 0 | python3 -c '
import json, sys
a = json.load(sys.stdin)
u = a.get("uses") or {}
print("  " + str(a["total"]) + " uses; by kind:", u.get("by_kind"), "by resolution:", u.get("by_resolution"))'
    "$CODE_INTEL" impact "$C_DEF" --root "$C_DIR" --json --limit 0 | python3 -c '
import json, sys
i = json.load(sys.stdin)
subs = i["subclasses"]["items"]
print("  impact: " + str(len(subs)) + " subclasses/implementations, " + str(i["importers"]["total"])
      + " importers, " + str(i["callers"]["total"]) + " callers; uses by kind:", i["uses"]["by_kind"])
for s in [s for s in subs if "test" not in s["path"]][:12]:
    print("    " + s["path"] + ":" + str(s["line"]) + " " + s["kind"] + " " + s["name"])'
    bench "$corpus-refs" -N --warmup "$WARMUP" --runs "$RUNS" --output=null \
        -n "code-intel refs $C_REF" "$CODE_INTEL refs $C_REF --root $C_DIR"
    row "$corpus: refs $C_REF (warm)" "$corpus-refs.json#0" - ms 500 ""
}

run_corpus() {
    local corpus="$1" part
    setup_corpus "$corpus"
    log "corpus $corpus"
    corpus_stats "$corpus"
    for part in $PARTS; do
        case "$part" in
            search | cold | incremental | defs | noindex | refs) "measure_$part" "$corpus" ;;
            *) echo "error: unknown part '$part' (search, cold, incremental, defs, noindex, refs)" >&2; exit 2 ;;
        esac
    done
}

# ---------------------------------------------------------------------------- report
report() {
    python3 - "$RESULTS" <<'PY'
import json, sys, os
results = sys.argv[1]
cache = {}

def load(ref):
    name, idx = ref.rsplit('#', 1)
    if name not in cache:
        with open(os.path.join(results, name)) as f:
            cache[name] = json.load(f)['results']
    return cache[name][int(idx)]

def ms(s):
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"

def num(v):
    return float('nan') if v is None else v * 1e3

rows = []
for line in open(os.path.join(results, 'rows.tsv')):
    what, ci, ref, kind, goal, note = line.rstrip('\n').split('\t')
    c = load(ci)
    r = load(ref) if ref != '-' else None
    if kind == 'ratio':
        ratio = c['median'] / r['median']
        met = ratio <= float(goal)
        rows.append([what, ms(c['median']), ms(r['median']), f"{ratio:.2f}x",
                     f"<= {goal}x", 'yes' if met else 'NO', note])
    else:
        met = c['median'] * 1000 < float(goal)
        rows.append([what, ms(c['median']), '-', '-', f"< {goal} ms", 'yes' if met else 'NO', note])

head = ['measurement', 'code-intel', 'reference', 'ratio', 'goal', 'met?']
widths = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
def fmt(cells):
    return '| ' + ' | '.join(c.ljust(w) for c, w in zip(cells, widths)) + ' |'
print(fmt(head))
print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
for x in rows:
    print(fmt(x[:6]))
notes = [f"  {x[0]}: {x[6]}" for x in rows if x[6]]
if notes:
    print('notes:')
    print('\n'.join(notes))

print('\ndetails (hyperfine, in ms):')
print(f"{'command':<44} {'mean':>9} {'± sd':>8} {'median':>9} {'min':>9} {'max':>9} {'runs':>5}")
seen = []
for line in open(os.path.join(results, 'rows.tsv')):
    _, ci, ref, *_ = line.split('\t')
    for r in (ref, ci):
        if r != '-' and r not in seen:
            seen.append(r)
for ref in seen:
    x = load(ref)
    label = ref.split('.json')[0].split('-')[0] + ': ' + x['command']
    print(f"{label[:44]:<44} {num(x['mean']):9.1f} {num(x['stddev']):8.1f} {num(x['median']):9.1f} "
          f"{num(x['min']):9.1f} {num(x['max']):9.1f} {len(x['times']):5d}")
PY
}

# ---------------------------------------------------------------------------- main
main() {
    install_tools
    log "building code-intel (cargo build --release --locked)"
    (cd "$REPO" && cargo build --release --locked)
    local built="${CARGO_TARGET_DIR:-$REPO/target}/release/code-intel"
    [[ -x $built ]] || { echo "error: $built was not built" >&2; exit 2; }
    # Measure a copy, so a rebuild in the work tree during the run cannot swap the binary;
    # one per run, so runs sharing a BENCH_DIR do not swap each other's either.
    mkdir -p "$BENCH_DIR/bin" "$TMP"
    CODE_INTEL="$BENCH_DIR/bin/code-intel.$$"
    trap 'rm -f "$CODE_INTEL"' EXIT
    cp "$built" "$CODE_INTEL"

    rm -rf "$RESULTS"
    mkdir -p "$RESULTS"
    : >"$ROWS"

    log "machine"
    echo "cores: $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
    echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "code-intel: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$REPO" && git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "$("$RG" --version | sed -n 1p) ($(command -v "$RG")); $(ctags --version | sed -n 1p | cut -d, -f1); $(hyperfine --version)"
    echo "hyperfine: warmup $WARMUP, runs $RUNS (cold index and ctags: $SLOW_RUNS)"

    local corpus
    for corpus in $CORPORA; do
        run_corpus "$corpus"
    done

    log "results (medians; cores: $(nproc); load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "reference: $("$RG" --version | sed -n 1p) ($RG)"
    local name files lines type src_files src_lines
    while IFS=$'\t' read -r name files lines type src_files src_lines; do
        echo "corpus $name: $files files, $lines lines ($src_files $type files, $src_lines lines)"
    done <"$RESULTS/corpora.tsv"
    echo
    report
}

main "$@"
