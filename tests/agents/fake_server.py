"""What the three scripted model servers share: their command line (MODE PORT_FILE LOG_FILE),
a JSON-lines log of what they saw, a quiet HTTP/1.1 handler that can answer JSON, and serving
on a free loopback port announced through PORT_FILE."""

import http.server
import json
import os
import sys

MODE, PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
_LOG = open(LOG_FILE, "a")


def log(rec):
    _LOG.write(json.dumps(rec) + "\n")
    _LOG.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _json(self, obj, code=200):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)


def serve(handler):
    """Serve `handler` on a free loopback port; write the port to PORT_FILE atomically."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(PORT_FILE + ".tmp", PORT_FILE)
    server.serve_forever()
