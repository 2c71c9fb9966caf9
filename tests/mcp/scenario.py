"""Drives code-intel's MCP server with the real Python `mcp` client, step by step.

Usage: scenario.py BINARY ROOT SCENARIO.json

A scenario is {"steps": [...]}; each step is one of
  {"call": TOOL, "args": {...}, "expect": {...}, "client": "a"}
      call a tool; `expect` is matched as a subset of {"is_error": bool, **structured content}
      (strings starting with "~" match as substrings; lists match item by item;
      null matches a key that is absent or null).
  {"write": PATH, "text": "..."}          write a file under ROOT (the agent editing code)
  {"kill": "a"}                           kill -9 that client's server process
  {"close": "a"}                          disconnect that client (the server exits)
  {"list_tools": ["name", ...], "client": "a"}   the listed tool names, exactly
  {"git": ["commit", "-am", "msg"]}       run git in ROOT
  {"edit_checkpoint": [FIND, REPLACE]}    edit the current session's checkpoint (tampering)
  {"sh": "git log --format=%s", "stdout": "~text"}  run a shell command in ROOT; match its stdout
                                          ($CODE_INTEL is the binary under test)
  {"lock": PATH} / {"unlock": PATH}       hold / release an exclusive flock on ROOT/PATH
A call step may add "progress": true (the progress notifications it received are matched
as "progress": [{"progress", "total", "message"}, ...]) and "retry": N (repeat it, 0.1 s
apart, up to N times until `expect` matches).
Every step's outcome is printed; the first mismatch exits 1 with the difference.
"""

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def matches(expected, actual, path="$"):
    """Returns None when `expected` is a subset of `actual`, else a description."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {json.dumps(actual)[:300]}"
        for k, v in expected.items():
            if v is None and actual.get(k) is None:
                continue
            if k not in actual:
                return f"{path}.{k}: missing (keys: {sorted(actual)})"
            problem = matches(v, actual[k], f"{path}.{k}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)[:300]}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = matches(e, a, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, str) and expected.startswith("~"):
        if isinstance(actual, str) and expected[1:] in actual:
            return None
        return f"{path}: expected text containing {expected[1:]!r}, got {json.dumps(actual)[:300]}"
    if expected != actual:
        return f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)[:300]}"
    return None


class Client:
    def __init__(self, binary, root, name):
        self.binary, self.root, self.name = binary, root, name
        self.stack = AsyncExitStack()
        self.pidfile = tempfile.mktemp(prefix="code-intel-pid-")
        self.session = None

    async def connect(self):
        # Started through sh so the test knows the server's pid (to kill it like a crash).
        params = StdioServerParameters(
            command="sh",
            args=["-c", f'echo $$ > "{self.pidfile}"; exec "$0" serve --root "$1"', self.binary, self.root],
            env=dict(os.environ),
        )
        read, write = await self.stack.enter_async_context(stdio_client(params))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()

    def kill(self):
        with open(self.pidfile) as f:
            os.kill(int(f.read().strip()), signal.SIGKILL)

    async def close(self):
        try:
            await self.stack.aclose()
        except BaseException:  # a killed server closes its pipes abruptly
            pass
        try:
            os.remove(self.pidfile)
        except FileNotFoundError:
            pass
        self.session = None


async def run(binary, root, scenario):
    steps = json.load(open(scenario))["steps"]
    clients = {}
    locks = {}

    async def client(name):
        if name not in clients or clients[name].session is None:
            c = Client(binary, root, name)
            await c.connect()
            clients[name] = c
        return clients[name]

    try:
        for n, step in enumerate(steps, 1):
            where = f"step {n}"
            if "call" in step:
                c = await client(step.get("client", "a"))
                for attempt in range(step.get("retry", 0) + 1):
                    notes = []

                    async def on_progress(progress, total, message, notes=notes):
                        notes.append({"progress": progress, "total": total, "message": message})

                    result = await c.session.call_tool(
                        step["call"], step.get("args", {}),
                        progress_callback=on_progress if step.get("progress") else None)
                    body = result.structured_content
                    if body is None:
                        text = "".join(getattr(b, "text", "") for b in result.content)
                        try:
                            body = json.loads(text)
                        except ValueError:
                            body = {"text": text}
                    actual = {"is_error": bool(result.is_error), **body}
                    if step.get("progress"):
                        actual["progress"] = notes
                    problem = matches(step.get("expect", {}), actual)
                    if not problem:
                        break
                    await asyncio.sleep(0.1)
                state = body.get("state", "")
                print(f"{where}: {step['call']} -> {'error ' + str(body.get('error')) if result.is_error else 'ok'} {state}")
                if problem:
                    print(f"{where} ({step['call']}): {problem}")
                    print(json.dumps(actual, indent=2, ensure_ascii=False)[:4000])
                    return 1
            elif "list_tools" in step:
                c = await client(step.get("client", "a"))
                names = sorted(t.name for t in (await c.session.list_tools()).tools)
                if names != sorted(step["list_tools"]):
                    print(f"{where}: tools {names}, expected {sorted(step['list_tools'])}")
                    return 1
            elif "write" in step:
                path = os.path.join(root, step["write"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(step["text"])
            elif "git" in step:
                subprocess.run(["git", *step["git"]], cwd=root, check=True, capture_output=True)
            elif "sh" in step:
                out = subprocess.run(["sh", "-c", step["sh"]], cwd=root, capture_output=True, text=True,
                                     env={**os.environ, "CODE_INTEL": binary})
                problem = matches(step.get("stdout", out.stdout), out.stdout) or (
                    None if out.returncode == step.get("status", 0) else f"exit status {out.returncode}")
                print(f"{where}: sh {step['sh']!r} -> {out.returncode}")
                if problem:
                    print(f"{where} (sh {step['sh']!r}): {problem}\n{out.stdout}{out.stderr}")
                    return 1
            elif "lock" in step:
                path = os.path.join(root, step["lock"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                handle = open(path, "a")
                fcntl.flock(handle, fcntl.LOCK_EX)
                locks[step["lock"]] = handle
            elif "unlock" in step:
                handle = locks.pop(step["unlock"])
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            elif "edit_checkpoint" in step:
                sessions = os.path.join(root, ".code-intel", "sessions")
                with open(os.path.join(sessions, "current.json")) as f:
                    current = json.load(f)["session"]
                path = os.path.join(sessions, current + ".json")
                with open(path) as f:
                    text = f.read()
                find, replace = step["edit_checkpoint"]
                if find not in text:
                    print(f"{where}: {find!r} not in the checkpoint")
                    return 1
                with open(path, "w") as f:
                    f.write(text.replace(find, replace, 1))
            elif "kill" in step:
                c = clients.pop(step["kill"])
                c.kill()
                await c.close()
            elif "close" in step:
                c = clients.pop(step["close"])
                await c.close()
            else:
                print(f"{where}: unknown step {step}")
                return 2
        return 0
    finally:
        for c in clients.values():
            await c.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(run(*sys.argv[1:4])))
