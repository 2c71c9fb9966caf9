"""How `code-intel lint` scales with the size of a contract (issue 9, "a loader with budgets").

Usage: python3 benches/contract_load.py CODE_INTEL [--max N] [--keep DIR]

Generates contracts with n = 1k, 2k, 4k, ... 64k (or up to --max) message keys, `x-` keys,
states (a chain S0 -> S1 -> ... -> DONE) and guarded transitions of one state (each with
its own flag and message), runs `code-intel lint FILE` on each (the output, one finding per
unused message, goes to a pipe that is read and dropped), and prints
the wall time and peak memory per n and the growth exponent fitted by least squares on
log(time) against log(n) (the goal is at most 1.2; 1 is linear, 2 quadratic). Then it runs
the hostile files of the issue: a 342-byte "billion laughs" alias bomb, 40k messages, a
50,000-state chain, 40k `x-` keys and a chain of 2,000 merge keys, each of which must finish
in under 1 s with less than 200 MB or be refused with a diagnostic.

--keep DIR writes the generated files there (for `perf record`) instead of a temporary
directory. Use a release build: `cargo build --release`, then
`python3 benches/contract_load.py target/release/code-intel`.
"""

import math
import os
import subprocess
import sys
import tempfile
import time

HEADER = """\
contract: bench.load
version: 1
host: agent-runner
locales: [en]
initial: S0
engine_messages:
  payload_invalid: engine.failed
  required_tools_not_used: engine.failed
  required_tools_not_reported: engine.failed
  tools_reported_not_called: engine.failed
  min_distinct_tools: engine.failed
  session_finished: engine.failed
  guard_failed: engine.failed
  action_failed: engine.failed
  unknown_state: engine.failed
"""

ENGINE_MESSAGE = '  engine.failed: {en: "The engine refused the request."}\n'


def messages(n):
    """n message keys (unused, so lint reports each one) and a two-state flow."""
    out = [HEADER, "messages:\n", ENGINE_MESSAGE]
    out += [f'  m.k{i}: {{en: "Message number {i}."}}\n' for i in range(n)]
    out.append("states:\n  S0: {kind: engine, otherwise: {to: DONE}}\n")
    out.append("  DONE: {kind: terminal, outcome: success}\n")
    return "".join(out)


def extensions(n):
    """n top-level `x-` keys, which the loader drops, around a two-state flow."""
    out = [HEADER, "messages:\n", ENGINE_MESSAGE]
    out.append("states:\n  S0: {kind: engine, otherwise: {to: DONE}}\n")
    out.append("  DONE: {kind: terminal, outcome: success}\n")
    out += [f"x-k{i}: {{note: extension {i}}}\n" for i in range(n)]
    return "".join(out)


def chain(n):
    """n engine states in a chain, each falling through to the next, then a terminal one."""
    out = [HEADER, "messages:\n", ENGINE_MESSAGE, "states:\n"]
    out += [f"  S{i}: {{kind: engine, otherwise: {{to: S{i + 1}}}}}\n" for i in range(n - 1)]
    out.append(f"  S{n - 1}: {{kind: engine, otherwise: {{to: DONE}}}}\n")
    out.append("  DONE: {kind: terminal, outcome: success}\n")
    return "".join(out)


def guards(n):
    """One state with n guarded transitions, each reading its own flag (n flags, n - 1
    `conflicts`) and showing its own message with an argument: guard checking, shadowing,
    placeholders and flag lookups, per transition."""
    out = [HEADER, "messages:\n", ENGINE_MESSAGE]
    out += [f'  m.k{i}: {{en: "Message {i} about {{x}}."}}\n' for i in range(n)]
    out.append("flags:\n")
    out += [f'  f{i}: {{type: bool, help: "Flag {i}."}}\n' for i in range(n)]
    out.append("conflicts:\n")
    out += [f"  - [f{i}, f{i + 1}]\n" for i in range(n - 1)]
    out.append("states:\n  S0:\n    kind: external\n    instruction: Submit x.\n")
    out.append("    payload: {type: object, properties: {x: {type: integer}}}\n")
    out.append("    transitions:\n")
    out += [f'      - {{when: "payload.x == {i} && !flags.f{i}", to: DONE, '
            f'message: {{key: m.k{i}, args: {{x: payload.x}}}}}}\n' for i in range(n)]
    out.append("    otherwise: {to: DONE}\n")
    out.append("  DONE: {kind: terminal, outcome: success}\n")
    return "".join(out)


def alias_bomb(levels=9):
    """The "billion laughs": each level is a list repeating the previous level 9 times."""
    out = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    for level in range(1, levels):
        prev, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        out.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]\n")
    return "".join(out)


def merge_chain(n):
    """Each mapping merges the previous one and adds a key: n levels, n*n/2 entries."""
    out = [HEADER, "messages:\n", ENGINE_MESSAGE]
    out.append("states:\n  S0: {kind: engine, otherwise: {to: DONE}}\n")
    out.append("  DONE: {kind: terminal, outcome: success}\n")
    out.append("x-m0: &m0 {k0: 0}\n")
    out += [f"x-m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}\n" for i in range(1, n)]
    return "".join(out)


def run(binary, path):
    """(seconds, peak RSS in MB, exit status, first line of output) of `lint path`.

    Memory comes from GNU time (`/usr/bin/time -f %M`) when it is installed, as the issue
    measured it; otherwise from wait4, which also counts the pages the child shared with
    this Python process before it exec'd.
    """
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with tempfile.NamedTemporaryFile(mode="r", suffix=".time") as stats:
        command = [binary, "lint", path, "--format", "human"]
        if gnu_time:
            command = [gnu_time, "-f", "%M", "-o", stats.name] + command
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        first = proc.stdout.readline().decode(errors="replace").strip()
        for _ in iter(lambda: proc.stdout.read(1 << 16), b""):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        kilobytes = usage.ru_maxrss
        if gnu_time:
            lines = stats.read().split()
            kilobytes = int(lines[-1]) if lines and lines[-1].isdigit() else kilobytes
    return elapsed, kilobytes / 1024, proc.returncode, first


def exponent(points):
    """The slope of log(time) against log(n), by least squares."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-4)) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    binary, rest = os.path.abspath(args[0]), args[1:]
    largest, keep = 64_000, None
    while rest:
        flag, value, *rest = rest
        if flag == "--max":
            largest = int(value)
        elif flag == "--keep":
            keep = value
        else:
            sys.exit(f"unknown option {flag}")
    directory = keep or tempfile.mkdtemp(prefix="contract-load-")
    os.makedirs(directory, exist_ok=True)

    def write(name, text):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    sizes = []
    n = 1000
    while n <= largest:
        sizes.append(n)
        n *= 2
    worst = 0.0
    families = [("messages", messages), ("x- keys", extensions), ("states", chain),
                ("guards", guards)]
    for label, make in families:
        print(f"{label:>10} {'n':>7} {'time (s)':>9} {'peak MB':>8}  exit")
        points = []
        for n in sizes:
            path = write(f"{label.split()[0].rstrip('-')}-{n}.yml", make(n))
            seconds, mb, status, _ = run(binary, path)
            points.append((n, seconds))
            print(f"{'':>10} {n:>7} {seconds:>9.3f} {mb:>8.1f}  {status}")
        slope = exponent(points)
        worst = max(worst, slope)
        print(f"{'':>10} fitted exponent {slope:.2f} (goal <= 1.2)\n")

    print(f"{'hostile file':<28} {'time (s)':>9} {'peak MB':>8}  first line of output")
    hostile = [
        ("alias bomb (9 levels)", "alias-bomb.yml", alias_bomb()),
        ("40,000 messages", "messages-40000.yml", messages(40_000)),
        ("40,000 x- keys", "x-keys-40000.yml", extensions(40_000)),
        ("50,000-state chain", "chain-50000.yml", chain(50_000)),
        ("2,000-level merge chain", "merge-chain-2000.yml", merge_chain(2_000)),
    ]
    ok = True
    for label, name, text in hostile:
        path = write(name, text)
        seconds, mb, status, first = run(binary, path)
        good = seconds < 1.0 and mb < 200
        ok &= good
        mark = "" if good else "  <- over 1 s or 200 MB"
        print(f"{label:<28} {seconds:>9.3f} {mb:>8.1f}  {first[:70]}{mark}")
    print(f"\nworst fitted exponent {worst:.2f} (goal <= 1.2); hostile files "
          + ("all within 1 s and 200 MB" if ok else "NOT all within 1 s and 200 MB"))
    if not keep:
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))
        os.rmdir(directory)


if __name__ == "__main__":
    main()
