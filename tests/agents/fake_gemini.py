#!/usr/bin/env python3
"""A scripted Gemini API (generateContent / streamGenerateContent) on loopback, for the real
Gemini CLI (GOOGLE_GEMINI_BASE_URL). Answers with `functionCall` parts decided by
model_script.py (list, classify, then a text). Gemini function calls carry no id we choose, so
calls are matched to their responses by order and tool name.

usage: fake_gemini.py MODE PORT_FILE LOG_FILE   (see fake_anthropic.py)"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server  # noqa: E402
import model_script  # noqa: E402

MODE, log = fake_server.MODE, fake_server.log


def kind(name):
    return "list" if (name or "").endswith("list_pending_failed_jobs") else "classify" if (name or "").endswith("classify_and_resolve_failures") else None


def text_of(response):
    if isinstance(response, dict):
        for key in ("output", "content", "result"):
            v = response.get(key)
            if isinstance(v, str):
                return v
            if isinstance(v, list):
                return "\n".join(x.get("text", "") if isinstance(x, dict) else str(x) for x in v)
    return json.dumps(response)


def conversation(contents):
    prompt, calls, responses = "", [], []
    for c in contents:
        for p in c.get("parts", []):
            if "text" in p and c.get("role") == "user" and not prompt:
                prompt = p["text"]
            elif "functionCall" in p:
                calls.append({"id": p["functionCall"].get("name"), "kind": kind(p["functionCall"].get("name")), "output": None})
            elif "functionResponse" in p:
                responses.append(text_of(p["functionResponse"].get("response")))
    for c, r in zip(calls, responses):
        c["output"] = r
    return prompt, [c for c in calls if c["kind"]]


class Handler(fake_server.Handler):

    def _send(self, obj, stream):
        if stream:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(("data: " + json.dumps(obj) + "\r\n\r\n").encode())
            self.wfile.flush()
            self.close_connection = True
        else:
            self._json(obj)

    def do_GET(self):
        log({"method": "GET", "path": self.path})
        self._send({}, False)

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        offered = [f.get("name") for t in req.get("tools", []) for f in t.get("functionDeclarations", [])]
        stream = "streamGenerateContent" in self.path
        if (req.get("generationConfig") or {}).get("responseMimeType") == "application/json":
            # The CLI's own side questions (e.g. who speaks next): not the agent's turn.
            log({"method": "POST", "path": self.path, "side_question": True})
            parts = [{"text": "{}"}]
        else:
            prompt, calls = conversation(req.get("contents", []))
            names = {"list": model_script.tool_named(offered, "list_pending_failed_jobs"),
                     "classify": model_script.tool_named(offered, "classify_and_resolve_failures")}
            step = model_script.next_step(MODE, prompt, calls) if all(names.values()) else ("text", "no triage tools were offered")
            log({"method": "POST", "path": self.path, "tools_offered": offered, "calls": calls, "answer": step,
                 "key": self.headers.get("x-goog-api-key")})
            parts = [{"functionCall": {"name": names[step[1]], "args": step[2]}}] if step[0] == "call" else [{"text": step[1]}]
        self._send({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                    "modelVersion": "fake"}, stream)


fake_server.serve(Handler)
