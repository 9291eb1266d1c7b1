"""Several TLS keep-alive clients (Python's ssl, one connection each) fetch the AASA file of
sites s0..s{N-1}.g.test over and over while the config tree is swapped, and check each answer
against the model: site i answers the body of tree "a" or of tree "b" (BODY with {tree} and {i}),
and no request sent after some client received a changed site's "b" answer gets its "a" answer
(one snapshot, never a mix). On a line "stop" on stdin they stop; then every site is fetched once
and must answer its "b" body. Prints a JSON summary.

usage: tree-clients.py PORT CAFILE SITES CHANGED CLIENTS BODY"""
import json
import socket
import ssl
import sys
import threading

port, cafile = int(sys.argv[1]), sys.argv[2]
sites, changed, clients, template = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
PATH = "/.well-known/apple-app-site-association"
READ_TIMEOUT = 10  # seconds: a server that stops answering fails the test instead of hanging it


def body(tree, i):
    return template.replace("{tree}", tree).replace("{i}", str(i)).encode()


class Client:
    def __init__(self):
        context = ssl.create_default_context(cafile=cafile)
        raw = socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT)
        # Every site uses the default wildcard certificate, so one connection serves them all.
        self.sock = context.wrap_socket(raw, server_hostname="s0.g.test")
        self.buffer = b""

    def get(self, host):
        self.sock.sendall(f"GET {PATH} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buffer:
            self.fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        length = next(int(l.split(":")[1]) for l in lines if l.lower().startswith("content-length:"))
        while len(self.buffer) < length:
            self.fill()
        answer, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, answer

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buffer += chunk


stop = threading.Event()
new_seen = threading.Event()
lock = threading.Lock()
report = {"answers": 0, "a": 0, "b": 0, "violations": [], "final": []}


def violation(text):
    with lock:
        if len(report["violations"]) < 20:
            report["violations"].append(text)


warm = threading.Barrier(clients + 1, timeout=READ_TIMEOUT)


def run(offset):
    try:
        client = Client()
        client.get("s0.g.test")
        warm.wait()
        i = offset
        while not stop.is_set():
            site = i % sites
            i += 7  # a stride prime to the site count: every client walks every site
            after_new = new_seen.is_set()
            status, answer = client.get(f"s{site}.g.test")
            with lock:
                report["answers"] += 1
            if status != 200:
                violation(f"s{site}: status {status}")
            elif answer == body("b", site) and site < changed:
                new_seen.set()
                with lock:
                    report["b"] += 1
            elif answer == body("a", site):
                with lock:
                    report["a"] += 1
                if site < changed and after_new:
                    violation(f"s{site}: the old tree's answer after the new tree was served")
            elif answer != body("b", site):
                violation(f"s{site}: an answer of neither tree: {answer[:60]!r}")
    except Exception as error:
        violation(f"client {offset}: {error!r}")


threads = [threading.Thread(target=run, args=(n * (sites // clients),)) for n in range(clients)]
for t in threads:
    t.start()
warm.wait()  # every client connected and answered once
print("started", flush=True)
sys.stdin.readline()
stop.set()
for t in threads:
    t.join()
final = Client()
for site in range(sites):
    status, answer = final.get(f"s{site}.g.test")
    expected = body("b", site) if site < changed else body("a", site)
    if status != 200 or answer != expected:
        report["final"].append(f"s{site}: {status}")
print(json.dumps(report), flush=True)
