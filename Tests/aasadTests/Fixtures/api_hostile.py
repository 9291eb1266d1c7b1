"""A hostile stand-in for the tenant API, for `aasad site`'s tests: one behaviour per run.

Usage: api_hostile.py MODE; prints its port on the first line. MODE:
  ansi      422 whose problems hold ANSI escapes, CR/LF and C1/bidi characters
  huge      200 with a 64 MiB body (the client must stop at its bound)
  silent    accepts and reads, never answers (the client must time out)
  redirect  301 to http://127.0.0.1:1/ (the client must not follow)
  ok        200 with a site state (the path and the Authorization value echoed)
"""
import json, socket, sys, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

MODE = sys.argv[1]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if MODE == "ansi":
            message = "bad\x1b[2J\x1b]0;owned\x07\r\nerror: forged line\u202e\u0085"
            problem = {"code": "x\x1b[31m", "severity": "error", "message": message, "path": "site.yaml\x1b[0m", "line": 1, "column": None}
            self.answer(422, json.dumps({"problems": [problem]}).encode())
        elif MODE == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(64 << 20))
            self.end_headers()
            chunk = b" " * 65536
            try:
                for _ in range(1024):
                    self.wfile.write(chunk)
            except OSError:
                pass
        elif MODE == "silent":
            threading.Event().wait(120)
        elif MODE == "redirect":
            self.answer(301, b'{"error":"moved","message":"moved"}', [("Location", "http://127.0.0.1:1/v1/sites/a.example")])
        else:
            state = {"host": "a.example", "etag": '"' + "0" * 64 + '"', "served": True,
                     "files": {"aasa": {"sha256": "0" * 64, "bytes": 2}, "assetlinks": None, "settings": None, "page": None},
                     "problems": [], "aliases": {"held": [], "refused": []},
                     "certificate": {"source": "default", "state": self.path + " " + (self.headers.get("Authorization") or ""), "notAfter": None}}
            self.answer(200, json.dumps(state).encode())

    do_GET = do_PUT = do_DELETE = handle_any


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
