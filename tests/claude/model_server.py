"""A scripted Anthropic Messages API on loopback, for running the real Claude Code offline.

Usage: model_server.py SCRIPT.json RECORD.jsonl

Listens on 127.0.0.1 on a free port and prints `PORT <n>` on stdout once it is ready;
MODEL_SERVER_HOST names another address of this machine (the Docker bridge's, for a
Claude Code in a container).
Every request (method, path, body) is appended to RECORD.jsonl as one JSON line, so a
test can read what the client sent back (the `tool_result` blocks).

SCRIPT.json is {"turns": [TURN, ...]}; a TURN is one of
  {"tool_use": {"name": "mcp__code-intel__start_session", "input": {...}}}
  {"text": "final answer"}
and may say {"expect_error": true} when the tool_result of *its* tool call is expected to
be an error (a hook denial, say). The server is stateless: the turn to answer is the
number of assistant messages already in the request's history, so retries and side
requests do not shift the script. When the previous tool_result is an error that its turn
did not expect, the run is ended with a text naming it (the test then fails on it),
instead of playing the rest of the script against a broken session.

Side requests (no `tools` in the body: titles, topic checks and the like), token
counting and anything unknown get harmless answers; unknown paths are logged to stderr.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "claude-scripted"
ID_PREFIX = "toolu_scripted_"
# A client that asks for the same turn again and again is stuck: end the run instead.
MAX_REPEATS = 5


def tool_results(message):
    """The tool_result blocks of one message."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block):
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return ""


class Script:
    def __init__(self, turns):
        self.turns = turns
        self.asked = {}

    def answer(self, body):
        """The content blocks and stop reason for a main-loop request."""
        messages = body.get("messages", [])
        # The client merges consecutive assistant messages, so turns are counted by the
        # scripted tool_use ids in the history, not by messages.
        answered = [
            int(b["id"][len(ID_PREFIX):])
            for m in messages
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use" and str(b.get("id", "")).startswith(ID_PREFIX)
        ]
        turn = max(answered) + 1 if answered else 0
        self.asked[turn] = self.asked.get(turn, 0) + 1
        if self.asked[turn] > MAX_REPEATS:
            text = f"SCRIPT STOPPED: the client asked for turn {turn} {MAX_REPEATS} times already"
            return turn, [{"type": "text", "text": text}], "end_turn"
        if turn > 0:
            previous = self.turns[turn - 1] if turn - 1 < len(self.turns) else {}
            wanted = f"{ID_PREFIX}{turn - 1:03d}"
            for block in (b for m in messages if m.get("role") == "user" for b in tool_results(m)):
                if block.get("tool_use_id") == wanted and block.get("is_error") and not previous.get("expect_error"):
                    name = previous.get("tool_use", {}).get("name", "?")
                    text = f"SCRIPT STOPPED: turn {turn - 1} ({name}) failed: {result_text(block)}"
                    return turn, [{"type": "text", "text": text}], "end_turn"
        if turn >= len(self.turns):
            return turn, [{"type": "text", "text": "SCRIPT EXHAUSTED"}], "end_turn"
        step = self.turns[turn]
        if "tool_use" in step:
            use = step["tool_use"]
            block = {
                "type": "tool_use",
                "id": f"{ID_PREFIX}{turn:03d}",
                "name": use["name"],
                "input": use.get("input", {}),
            }
            return turn, [block], "tool_use"
        return turn, [{"type": "text", "text": step.get("text", "done")}], "end_turn"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = None
    record = None
    lock = threading.Lock()

    def log_message(self, fmt, *args):  # the default logs every request to stderr
        pass

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _record(self, body):
        entry = {"method": self.command, "path": self.path, "body": body}
        with self.lock, open(self.record, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def _json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._record(None)
        sys.stderr.write(f"model_server: unscripted GET {self.path}\n")
        self._json(200, {})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self._body()
        self._record(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return self._json(200, {"input_tokens": 100})
        if path != "/v1/messages":
            sys.stderr.write(f"model_server: unscripted POST {self.path}\n")
            return self._json(200, {})
        if body.get("tools"):
            turn, content, stop = self.script.answer(body)
            message_id = f"msg_scripted_{turn:03d}"
        else:
            # A side request (no tools: a title, a topic check): answer something harmless.
            content, stop = [{"type": "text", "text": "ok"}], "end_turn"
            message_id = "msg_side"
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
        if body.get("stream"):
            self._stream(message)
        else:
            self._json(200, message)

    def _stream(self, message):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        start = dict(message, content=[], stop_reason=None)
        start["usage"] = {"input_tokens": 10, "output_tokens": 1}
        event("message_start", {"type": "message_start", "message": start})
        for i, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                empty = dict(block, input={})
                event("content_block_start", {"type": "content_block_start", "index": i, "content_block": empty})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                delta = {"type": "text_delta", "text": block["text"]}
            event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                "usage": {"output_tokens": 10}})
        event("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True


def main(script_path, record_path):
    with open(script_path) as f:
        Handler.script = Script(json.load(f)["turns"])
    Handler.record = record_path
    open(record_path, "w").close()
    server = ThreadingHTTPServer((os.environ.get("MODEL_SERVER_HOST", "127.0.0.1"), 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(*sys.argv[1:3])
