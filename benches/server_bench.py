"""Measures the MCP server as a client sees it, through the real Python `mcp` client.

Usage: server_bench.py BINARY SCENARIO.json DJANGO_DIR

Prints, with the goals of issue 7:
  session   a complete default session (the scenario's calls) after `initialize`,
            trivial tool work: goal < 500 ms
  status    get_session_status round trip, p50: goal < 2 ms
  defs      find_definitions, warm, in a server on Django's source, p50: goal < 2 ms
  hook      `code-intel hook claude` as a cold process deciding a write, p50: goal < 10 ms
  hook-sh   the same deciding a `Bash` command that writes (the shell matcher), p50: goal < 10 ms
"""

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def git_repo(files):
    d = tempfile.mkdtemp(prefix="code-intel-bench-")
    for path, text in files.items():
        p = os.path.join(d, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"],
                ["git", "config", "user.name", "b"], ["git", "config", "user.email", "b@b"]):
        subprocess.run(cmd, cwd=d, check=True)
    return d


async def connect(stack, binary, root):
    params = StdioServerParameters(command=binary, args=["serve", "--root", root], env=dict(os.environ))
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, round((len(s) - 1) * p))]


async def one_session(binary, scenario):
    from contextlib import AsyncExitStack
    root = git_repo(scenario["files"])
    try:
        async with AsyncExitStack() as stack:
            session = await connect(stack, binary, root)
            start = time.perf_counter()
            for step in scenario["steps"]:
                if "call" in step:
                    await session.call_tool(step["call"], step.get("args", {}))
                elif "write" in step:
                    with open(os.path.join(root, step["write"]), "w") as f:
                        f.write(step["text"])
                elif "sh" in step:
                    # Checks of the repository are the test's, not the session's work.
                    if step["sh"].startswith("rm "):
                        subprocess.run(["sh", "-c", step["sh"]], cwd=root, check=True)
            return (time.perf_counter() - start) * 1000
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def status_round_trips(binary, scenario, n=300):
    from contextlib import AsyncExitStack
    root = git_repo(scenario["files"])
    try:
        async with AsyncExitStack() as stack:
            session = await connect(stack, binary, root)
            await session.call_tool("start_session", {"query": "bench", "flags": "--no-doc"})
            samples = []
            for _ in range(n):
                t = time.perf_counter()
                await session.call_tool("get_session_status", {})
                samples.append((time.perf_counter() - t) * 1000)
            return samples
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def defs_on_django(binary, django, names, n=300):
    from contextlib import AsyncExitStack
    async with AsyncExitStack() as stack:
        session = await connect(stack, binary, django)
        t0 = time.perf_counter()
        while True:
            r = await session.call_tool("find_definitions", {"name": names[0]})
            if (r.structured_content or {}).get("source") == "index":
                break
            if time.perf_counter() - t0 > 600:
                raise SystemExit("the Django index was not ready after 600 s")
            await asyncio.sleep(0.2)
        ready = time.perf_counter() - t0
        for name in names:  # warm each name once
            await session.call_tool("find_definitions", {"name": name})
        samples = []
        for i in range(n):
            t = time.perf_counter()
            r = await session.call_tool("find_definitions", {"name": names[i % len(names)]})
            samples.append((time.perf_counter() - t) * 1000)
            if r.is_error:
                raise SystemExit(f"find_definitions failed: {r.structured_content}")
        return ready, samples


async def hook_cold(binary, n=200, tool="Write"):
    """The hook deciding a Write (or, with tool="Bash", a shell command that writes)
    during an active session (it reads and verifies the sealed checkpoint): the path
    every edit of an agent takes."""
    from contextlib import AsyncExitStack
    root = git_repo({"a.py": "x = 1\n"})
    try:
        help_out = subprocess.run([binary, "hook", "--help"], capture_output=True, text=True)
        if help_out.returncode != 0:
            return None
        async with AsyncExitStack() as stack:
            session = await connect(stack, binary, root)
            await session.call_tool("start_session", {"query": "bench", "flags": "--no-doc"})
        tool_input = ({"command": "sed -i 's/1/2/' a.py && echo done > notes.txt"} if tool == "Bash"
                      else {"file_path": os.path.join(root, "a.py"), "content": "y"})
        event = json.dumps({"session_id": "s", "cwd": root, "hook_event_name": "PreToolUse",
                            "tool_name": tool, "tool_input": tool_input})
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            out = subprocess.run([binary, "hook", "claude"], input=event, capture_output=True, text=True, check=True)
            samples.append((time.perf_counter() - t) * 1000)
        if "deny" not in out.stdout:
            raise SystemExit(f"the hook did not deny a write before implementation: {out.stdout!r}")
        return samples
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def main(binary, scenario_path, django):
    scenario = json.load(open(scenario_path))
    sessions = [await one_session(binary, scenario) for _ in range(5)]
    status = await status_round_trips(binary, scenario)
    names = ["QuerySet", "get_user_model", "ModelAdmin", "reverse", "HttpResponse", "slugify",
             "Field", "render", "csrf_exempt", "login_required"]
    ready, defs = await defs_on_django(binary, django, names)
    hook = await hook_cold(binary)
    hook_sh = await hook_cold(binary, tool="Bash")
    calls = sum(1 for s in scenario["steps"] if "call" in s)
    rows = [
        ("session", f"{statistics.median(sessions):.0f} ms median of 5 ({calls} tool calls)", "< 500 ms", statistics.median(sessions) < 500),
        ("status", f"{pct(status, 0.5):.2f} ms p50, {pct(status, 0.9):.2f} ms p90", "< 2 ms p50", pct(status, 0.5) < 2),
        ("defs", f"{pct(defs, 0.5):.2f} ms p50, {pct(defs, 0.9):.2f} ms p90 (index ready after {ready:.1f} s)", "< 2 ms p50", pct(defs, 0.5) < 2),
    ]
    if hook is None:
        rows.append(("hook", "not available in this build", "< 10 ms p50", False))
    else:
        rows.append(("hook", f"{pct(hook, 0.5):.2f} ms p50, {pct(hook, 0.9):.2f} ms p90 (cold process, deny during a session)", "< 10 ms p50", pct(hook, 0.5) < 10))
    if hook_sh is not None:
        rows.append(("hook-sh", f"{pct(hook_sh, 0.5):.2f} ms p50, {pct(hook_sh, 0.9):.2f} ms p90 (cold process, a Bash write denied)", "< 10 ms p50", pct(hook_sh, 0.5) < 10))
    print(f"{'what':<8} {'measured':<60} {'goal':<12} met")
    for what, measured, goal, met in rows:
        print(f"{what:<8} {measured:<60} {goal:<12} {'yes' if met else 'NO'}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
