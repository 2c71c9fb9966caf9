"""A scripted OpenAI Responses API on loopback, for running the real Codex CLI offline.

Usage: model_server.py SCRIPT.json RECORD.jsonl

Listens on 127.0.0.1 on a free port and prints `PORT <n>` on stdout once it is ready;
MODEL_SERVER_HOST names another address of this machine (the Docker bridge's, for a Codex
in a container).
Every request (method, path, body) is appended to RECORD.jsonl as one JSON line, so a
test can read what the client sent back (the `function_call_output` and
`custom_tool_call_output` items of the next request's `input`).

Codex reaches it as a custom model provider (`[model_providers.X]` with `base_url` ending
in `/v1` and `wire_api = "responses"`): POST {base_url}/responses with `stream: true`,
answered here as server-sent events, the shapes Codex's SSE parser reads
(codex-rs/codex-api/src/sse/responses.rs): `response.created`, one
`response.output_item.done` per output item, then `response.completed` with the
response id and usage.

SCRIPT.json is {"turns": [TURN, ...]}; a TURN is one of
  {"function_call": {"name": "mcp__code_intel__start_session", "arguments": {...}}}
  {"custom_tool_call": {"name": "apply_patch", "input": "*** Begin Patch ..."}}
  {"tool_search_call": {"query": "code-intel start_session", "limit": 10}}
  {"text": "final answer"}
and may say {"stop_unless": "TEXT"}: when the output Codex returns for *its* call does not
contain TEXT, the run is ended with a text naming the turn and the output (the test then
fails on it), instead of playing the rest of the script against a broken session.
The server is stateless: the turn to answer is one past the highest scripted call id
(`call_scripted_NNN`) in the request's history, so retries and side requests do not
shift the script.

Requests without tools (titles, summaries and the like), the models list and anything
unknown get harmless answers; unknown paths are logged to stderr.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ID_PREFIX = "call_scripted_"
# A client that asks for the same turn again and again is stuck: end the run instead.
MAX_REPEATS = 5
CALL_TYPES = ("function_call", "custom_tool_call", "tool_search_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "tool_search_output")


def output_text(item):
    """The text of a function_call_output / custom_tool_call_output item (the tools a
    tool_search_output found, as JSON)."""
    if item.get("type") == "tool_search_output":
        return json.dumps(item.get("tools"))
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        # {"content": "...", "success": bool} in some versions
        content = output.get("content")
        if isinstance(content, str):
            return content
        output = output.get("content_items") or content
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    return json.dumps(output)


class Script:
    def __init__(self, turns):
        self.turns = turns
        self.asked = {}
        self.lock = threading.Lock()

    def answer(self, body):
        """The output items of a main-loop request, and the turn it answers."""
        items = [i for i in body.get("input", []) if isinstance(i, dict)]
        answered = [
            int(i["call_id"][len(ID_PREFIX):])
            for i in items
            if i.get("type") in CALL_TYPES and str(i.get("call_id", "")).startswith(ID_PREFIX)
        ]
        turn = max(answered) + 1 if answered else 0
        with self.lock:
            self.asked[turn] = self.asked.get(turn, 0) + 1
            repeats = self.asked[turn]
        if repeats > MAX_REPEATS:
            return turn, [message(f"SCRIPT STOPPED: the client asked for turn {turn} {MAX_REPEATS} times already")]
        if turn > 0 and turn - 1 < len(self.turns):
            previous = self.turns[turn - 1]
            wanted = f"{ID_PREFIX}{turn - 1:03d}"
            expected = previous.get("stop_unless")
            for item in items:
                if item.get("type") in OUTPUT_TYPES and item.get("call_id") == wanted and expected is not None:
                    text = output_text(item)
                    if expected not in text:
                        call = previous.get("function_call") or previous.get("custom_tool_call") or {}
                        name = call.get("name", "tool_search")
                        return turn, [message(f"SCRIPT STOPPED: turn {turn - 1} ({name}) returned no {expected!r}: {text}")]
        if turn >= len(self.turns):
            return turn, [message("SCRIPT EXHAUSTED")]
        step = self.turns[turn]
        call_id = f"{ID_PREFIX}{turn:03d}"
        if "function_call" in step:
            call = step["function_call"]
            item = {
                "type": "function_call",
                "id": f"fc_scripted_{turn:03d}",
                "call_id": call_id,
                "name": call["name"],
                "arguments": json.dumps(call.get("arguments", {})),
            }
            if "namespace" in call:
                item["namespace"] = call["namespace"]
            return turn, [item]
        if "custom_tool_call" in step:
            call = step["custom_tool_call"]
            return turn, [{
                "type": "custom_tool_call",
                "id": f"ctc_scripted_{turn:03d}",
                "call_id": call_id,
                "name": call["name"],
                "input": call["input"],
            }]
        if "tool_search_call" in step:
            # Deferred tools (the MCP servers' with some models) are loaded by a search
            # that the client runs itself ("execution": "client").
            return turn, [{
                "type": "tool_search_call",
                "id": f"tsc_scripted_{turn:03d}",
                "call_id": call_id,
                "execution": "client",
                "arguments": step["tool_search_call"],
            }]
        return turn, [message(step.get("text", "done"))]


def message(text):
    return {
        "type": "message",
        "role": "assistant",
        "id": "msg_scripted",
        "content": [{"type": "output_text", "text": text}],
    }


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
        if self.headers.get("Content-Encoding", "").lower() == "zstd":
            return {"_raw": "zstd-compressed body (not decoded)"}
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
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "models": []})
        sys.stderr.write(f"model_server: unscripted GET {self.path}\n")
        self._json(404, {"error": {"message": "not scripted"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self._body()
        self._record(body)
        path = self.path.split("?")[0]
        if not path.endswith("/responses"):
            sys.stderr.write(f"model_server: unscripted POST {self.path}\n")
            return self._json(404, {"error": {"message": "not scripted"}})
        if body.get("tools"):
            turn, output = self.script.answer(body)
            response_id = f"resp_scripted_{turn:03d}"
        else:
            # A side request (no tools: a title, a summary): answer something harmless.
            output, response_id = [message("ok")], "resp_side"
        self._stream(response_id, output)

    def _stream(self, response_id, output):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(data):
            self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())

        event({"type": "response.created", "response": {"id": response_id}})
        for index, item in enumerate(output):
            event({"type": "response.output_item.done", "output_index": index, "item": item})
        usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
        event({"type": "response.completed", "response": {"id": response_id, "usage": usage}})
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
