#!/usr/bin/env python3
"""A scripted Anthropic Messages API on loopback, for the real Claude Code CLI (and Copilot CLI
in BYOK mode with COPILOT_PROVIDER_TYPE=anthropic). Streams SSE as the CLIs ask
(`"stream": true`); answers with `tool_use` blocks decided by model_script.py: list the
pending_failed jobs, read the tool_result that comes back in the next request, classify, then
a final text.

usage: fake_anthropic.py MODE PORT_FILE LOG_FILE
The port (chosen by the OS) is written to PORT_FILE once the server listens. Every request is
logged to LOG_FILE as one JSON line: path, the tool names offered, the tool results received
and what was answered."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server  # noqa: E402
import model_script  # noqa: E402

MODE, log = fake_server.MODE, fake_server.log


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c) for c in content)
    return json.dumps(content)


def conversation(messages):
    """The prompt (first user text) and our earlier tool calls with their results."""
    prompt, calls, results = "", [], {}
    for m in messages:
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for b in blocks:
            if b.get("type") == "text" and m.get("role") == "user" and not prompt:
                prompt = b.get("text", "")
            elif b.get("type") == "tool_use":
                calls.append({"id": b["id"], "kind": model_script.kind_of(b["id"]), "output": None})
            elif b.get("type") == "tool_result":
                results[b.get("tool_use_id")] = text_of(b.get("content"))
    for c in calls:
        c["output"] = results.get(c["id"])
    return prompt, [c for c in calls if c["kind"]]


class Handler(fake_server.Handler):

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        self._json({"data": [], "has_more": False})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not self.path.split("?")[0].endswith("/v1/messages"):
            log({"method": "POST", "path": self.path})
            self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
            return
        req = json.loads(body or b"{}")
        offered = [t.get("name") for t in req.get("tools", [])]
        prompt, calls = conversation(req.get("messages", []))
        names = {k: model_script.tool_named(offered, t) for k, t in
                 (("list", "list_pending_failed_jobs"), ("classify", "classify_and_resolve_failures"))}
        if names["list"] and names["classify"]:
            step = model_script.next_step(MODE, prompt, calls)
        else:
            step = ("text", "no triage tools were offered")
        log({"method": "POST", "path": self.path, "stream": req.get("stream"), "model": req.get("model"),
             "tools_offered": offered, "calls": calls, "answer": step,
             "user_agent": self.headers.get("user-agent"), "api_key": self.headers.get("x-api-key")})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        w = self.wfile.write
        n = len(calls) + 1
        w(sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": req.get("model", "fake"), "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}))
        if step[0] == "call":
            _, kind, args = step
            block = {"type": "tool_use", "id": model_script.call_id(kind, calls, "toolu"), "name": names[kind], "input": {}}
            w(sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}))
            raw = json.dumps(args)
            for i in range(0, len(raw), 200):  # streamed in pieces, as a real model does
                w(sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "input_json_delta", "partial_json": raw[i:i + 200]}}))
            stop = "tool_use"
        else:
            w(sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            w(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": step[1]}}))
            stop = "end_turn"
        w(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        w(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 5}}))
        w(sse("message_stop", {"type": "message_stop"}))
        self.wfile.flush()
        self.close_connection = True


fake_server.serve(Handler)
