"""Definition recall of code-intel against universal-ctags on the same tree.

Usage: python3 benches/recall.py CODE_INTEL DIR LANGUAGE [KIND ...]

Runs `ctags -R --languages=LANGUAGE` and `code-intel index` + `code-intel structure . --json
--limit 0` in DIR, and counts, per ctags kind (all of them, or the KINDs given), how many
ctags definitions code-intel also has: same file, same name, and the name on ctags' line or
up to 20 lines below it (ctags gives the line where a construct starts, code-intel the line
of its name: `unsafe impl<\n  T: ...\n> Trait for Name`). Prints a table,
the overall recall, and up to 10 misses per kind, so a regression names what it lost.
"""

import collections
import json
import subprocess
import sys


def ctags_tags(directory, language):
    out = subprocess.run(
        ["ctags", "-R", f"--languages={language}", "--fields=+nK", "-f", "-", "."],
        cwd=directory, capture_output=True, text=True, errors="replace", check=True).stdout
    tags = []
    for line in out.splitlines():
        if line.startswith("!_"):
            continue
        parts = line.split("\t")
        name, path = parts[0], parts[1]
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        kind = next((p for p in parts[3:] if ":" not in p), "?")
        if "line" in fields:
            tags.append((path.removeprefix("./"), int(fields["line"]), name, kind))
    return tags


def ours(binary, directory):
    subprocess.run([binary, "index"], cwd=directory, capture_output=True, check=True)
    out = subprocess.run([binary, "structure", ".", "--json", "--limit", "0"], cwd=directory,
                         capture_output=True, check=True).stdout
    found = set()

    def walk(path, outline):
        for o in outline:
            for before in range(21):
                found.add((path, o["line"] - before, o["name"]))
            walk(path, o.get("children", []))

    for f in json.loads(out)["files"]["items"]:
        walk(f["path"], f["outline"])
    return found


def main():
    binary, directory, language, *kinds = sys.argv[1:]
    theirs = [t for t in ctags_tags(directory, language) if not kinds or t[3] in kinds]
    mine = ours(binary, directory)
    per_kind = collections.defaultdict(lambda: [0, 0, []])
    for path, line, name, kind in theirs:
        row = per_kind[kind]
        row[0] += 1
        if (path, line, name) in mine:
            row[1] += 1
        elif len(row[2]) < 10:
            row[2].append(f"{path}:{line}: {name}")
    total = sum(r[0] for r in per_kind.values())
    hit = sum(r[1] for r in per_kind.values())
    print(f"{'ctags kind':<16} {'ctags':>8} {'found':>8} {'recall':>8}")
    for kind, (n, h, _) in sorted(per_kind.items(), key=lambda kv: -kv[1][0]):
        print(f"{kind:<16} {n:>8} {h:>8} {100 * h / n:>7.2f}%")
    print(f"{'all':<16} {total:>8} {hit:>8} {100 * hit / max(total, 1):>7.2f}%")
    for kind, (n, h, misses) in sorted(per_kind.items()):
        if misses:
            print(f"\nmissed {kind} (first {len(misses)} of {n - h}):")
            for m in misses:
                print(f"  {m}")


if __name__ == "__main__":
    main()
