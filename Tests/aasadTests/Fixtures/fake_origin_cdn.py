"""A fake origin and a fake Apple CDN on one TLS port, for `aasad check` and the CDN watch.

Usage: fake_origin_cdn.py PORT DIR   (PORT 0: any free port; the port is printed on a line of its own)
  DIR/certs/default/{cert,key}.pem   the certificate for every SNI name without its own
  DIR/certs/<sni>/{cert,key}.pem     the certificate for that SNI name
  DIR/origin/<host>                  the host's AASA file (200, application/json); absent: 404
  DIR/origin/<host>.assetlinks       its assetlinks.json
  DIR/cdn/<host>                     the CDN's copy (200); absent: 404 with Apple-Failure-Reason
  DIR/cdn/<host>.status              the CDN answers this status instead
  DIR/cdn-requests                   one line per CDN request: the host asked for
  /v1/statements:list?source.web.site=https://HOST&relation=…
                                     a fake Digital Asset Links API: the statements Google would
                                     list from DIR/origin/<host>.assetlinks (none without it), or
  DIR/dal/<host>                     this body instead (200, as it is)
  DIR/dal/<host>.status              this status instead (the body from dal/<host>, if any)
  DIR/dal/<host>.sleep               seconds to wait before answering
  DIR/dal-requests                   one line per API request: its query as received
Hosts with a fixed misbehaviour: redirect.test (301), html.test (text/html), botblock.test
(403 to User-Agents starting with AASA-Bot). Files are read on every request, so a test can
change them while the server runs.
"""
import http.server
import json
import os
import ssl
import sys
import time
import urllib.parse

PORT = int(sys.argv[1])
DIR = sys.argv[2]


def read(*parts):
    try:
        with open(os.path.join(DIR, *parts), "rb") as f:
            return f.read()
    except OSError:
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def statements(self, site):
        # What Google's API lists for a site: one statement per app and certificate of the
        # origin's file, the site written with the root's trailing dot as Google writes it.
        name = site[len("https://"):] if site.startswith("https://") else site
        try:
            served = json.loads(read("origin", name + ".assetlinks") or b"[]")
        except ValueError:
            served = []
        listed = []
        for statement in served if isinstance(served, list) else []:
            target = statement.get("target", {}) if isinstance(statement, dict) else {}
            if "delegate_permission/common.handle_all_urls" not in statement.get("relation", []) or target.get("namespace") != "android_app":
                continue
            for fingerprint in target.get("sha256_cert_fingerprints", []):
                listed.append({
                    "source": {"web": {"site": site + "."}},
                    "relation": "delegate_permission/common.handle_all_urls",
                    "target": {"androidApp": {"packageName": target.get("package_name"), "certificate": {"sha256Fingerprint": fingerprint}}},
                })
        answer = {"maxAge": "599.998s", "debugString": "********************* ERRORS *********************\nNone!\n"}
        if listed:
            answer["statements"] = listed
        return json.dumps(answer).encode()

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        if self.path.startswith("/v1/statements:list?"):
            query = self.path.split("?", 1)[1]
            with open(os.path.join(DIR, "dal-requests"), "a") as log:
                log.write(query + "\n")
            site = urllib.parse.parse_qs(query).get("source.web.site", [""])[0]
            name = site[len("https://"):]
            pause = read("dal", name + ".sleep")
            if pause is not None:
                time.sleep(float(pause))
            status = read("dal", name + ".status")
            body = read("dal", name)
            if status is not None:
                return self.answer(int(status.strip()), body or b"")
            return self.answer(200, body if body is not None else self.statements(site))
        agent = self.headers.get("User-Agent") or ""
        if self.path.startswith("/a/v1/"):
            name = self.path[len("/a/v1/"):]
            with open(os.path.join(DIR, "cdn-requests"), "a") as log:
                log.write(name + "\n")
            status = read("cdn", name + ".status")
            if status is not None:
                return self.answer(int(status.strip()), b"", extra=[("Apple-Failure-Reason", "SWCERR00301 Timeout")])
            body = read("cdn", name)
            if body is None:
                return self.answer(404, b"", extra=[("Apple-Failure-Reason", "SWCERR00101 Bad HTTP Response: 404 Not Found")])
            return self.answer(200, body, extra=[("Apple-Origin-Format", "json")])
        if self.path == "/.well-known/assetlinks.json":
            body = read("origin", host + ".assetlinks")
            return self.answer(404, b"not found", "text/plain") if body is None else self.answer(200, body)
        if self.path != "/.well-known/apple-app-site-association":
            return self.answer(404, b"not found", "text/plain")
        body = read("origin", host)
        if host == "redirect.test":
            return self.answer(301, b"", "text/html", [("Location", "https://www.redirect.test" + self.path)])
        if host == "hostile.test":
            # What a hostile server may send: an OSC sequence (retitles the window), a bidi
            # override, a C1 CSI and bytes that are not UTF-8 in a header; its file is the test's.
            body = body or b"{}"
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\x1b]0;pwned\x07\xe2\x80\xae\x9b2J\xff\r\n"
                + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            return
        if host == "html.test":
            return self.answer(200, body or b"{}", "text/html; charset=utf-8")
        if host == "botblock.test" and agent.startswith("AASA-Bot"):
            return self.answer(403, b"<h1>Access denied</h1>", "text/html")
        if body is None:
            return self.answer(404, b"not found", "text/plain")
        return self.answer(200, body)


def context_for(name):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(DIR, "certs", name, "cert.pem"), os.path.join(DIR, "certs", name, "key.pem"))
    return context


contexts = {name: context_for(name) for name in os.listdir(os.path.join(DIR, "certs"))}
default = contexts["default"]


def choose(sock, server_name, _):
    if server_name in contexts:
        sock.context = contexts[server_name]


default.sni_callback = choose
class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self):
        # The handshake in the request's own thread (do_handshake_on_connect=False), so that a
        # client that stalls it holds no other test's requests.
        sock, address = self.socket.accept()
        return sock, address


server = Server(("127.0.0.1", PORT), Handler)
server.socket = default.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
print(server.server_address[1], flush=True)
server.serve_forever()
