#!/usr/bin/env python3
"""A scripted OpenAI Responses API on loopback, for the real Codex CLI (through a custom
model provider: `-c model_provider=... -c model_providers.X={base_url=...}`). Streams SSE;
answers with `function_call` items decided by model_script.py (list, classify, then a text).
Codex offers MCP tools as a `namespace` tool (`mcp__triage`) holding the functions.

usage: fake_openai.py MODE PORT_FILE LOG_FILE   (see fake_anthropic.py)"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server  # noqa: E402
import model_script  # noqa: E402

MODE, log = fake_server.MODE, fake_server.log


def sse(d):
    return f"event: {d['type']}\ndata: {json.dumps(d)}\n\n".encode()


def offered(tools):
    """Tool names as `namespace::function` for namespaced tools, else the name (or type)."""
    out = {}
    for t in tools:
        if "tools" in t:
            for x in t["tools"]:
                out[f"{t.get('name')}::{x.get('name')}"] = (t.get("name"), x.get("name"))
        else:
            name = t.get("name") or t.get("type")
            out[name] = (None, name)
    return out


def text_of(output):
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(o.get("text", "") if isinstance(o, dict) else str(o) for o in output)
    return json.dumps(output)


def conversation(items):
    prompt, calls, results = "", [], {}
    for i in items:
        if not isinstance(i, dict):
            continue
        if i.get("type") == "message" and i.get("role") == "user" and not prompt:
            prompt = text_of(i.get("content"))
        elif i.get("type") == "function_call":
            calls.append({"id": i.get("call_id"), "kind": model_script.kind_of(i.get("call_id")), "output": None})
        elif i.get("type") in ("function_call_output", "custom_tool_call_output"):
            results[i.get("call_id")] = text_of(i.get("output"))
    for c in calls:
        c["output"] = results.get(c["id"])
    return prompt, [c for c in calls if c["kind"]]


class Handler(fake_server.Handler):

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        self._json({"data": [], "models": [], "object": "list"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not self.path.split("?")[0].endswith("/responses"):
            log({"method": "POST", "path": self.path})
            self._json({})
            return
        req = json.loads(body)
        tools = offered(req.get("tools", []))
        prompt, calls = conversation(req.get("input", []))
        names = {k: next((v for n, v in tools.items() if v[1] == t and v[0] and "triage" in v[0]), None)
                 for k, t in (("list", "list_pending_failed_jobs"), ("classify", "classify_and_resolve_failures"))}
        step = model_script.next_step(MODE, prompt, calls) if names["list"] and names["classify"] else ("text", "no triage tools were offered")
        log({"method": "POST", "path": self.path, "stream": req.get("stream"), "model": req.get("model"),
             "tools_offered": sorted(tools), "calls": calls, "answer": step, "auth": self.headers.get("authorization")})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        w = self.wfile.write
        rid = f"resp_{len(calls) + 1}"
        w(sse({"type": "response.created", "response": {"id": rid}}))
        if step[0] == "call":
            _, kind, args = step
            ns, fn = names[kind]
            item = {"type": "function_call", "id": f"fc_{len(calls) + 1}", "name": fn, "namespace": ns,
                    "arguments": json.dumps(args), "call_id": model_script.call_id(kind, calls)}
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{len(calls) + 1}",
                    "content": [{"type": "output_text", "text": step[1], "annotations": []}]}
        w(sse({"type": "response.output_item.done", "output_index": 0, "item": item}))
        w(sse({"type": "response.completed", "response": {"id": rid, "usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}}))
        self.wfile.flush()
        self.close_connection = True


fake_server.serve(Handler)
