"""Socket activation as systemd does it, for tests: holds a listening socket and runs aasad with
it passed as descriptor 3 (LISTEN_FDS=1, LISTEN_FDNAMES=https, LISTEN_PID), restarting it on
command while clients keep connecting, so that a test can count what a restart refused.

Usage: socket_activation.py AASAD ARGS...   (the serve arguments, without --https)
Prints "port N" once bound and "ready" whenever a process is ready. Reads commands on stdin:
  restart   SIGTERM the running process, wait for it, start a new one (systemctl restart)
  load N    start N client threads making new TLS connections (HTTP/1.1), each one GET, in a loop
  load-h2 N the same with curl over HTTP/2
  report    stop the clients and print {"ok": n, "failed": n, "errors": [...]} as one line
"""
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading

# A launcher that hangs (aasad never ready) must not hang the test suite: end within 2 minutes.
signal.alarm(120)

aasad, args = sys.argv[1], sys.argv[2:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(4096)
port = listener.getsockname()[1]
print("port", port, flush=True)
child = None  # the running aasad (a Popen)


def start():
    global child
    # Descriptor 3 in the child, and LISTEN_PID its own pid: set by the shell that execs aasad
    # (no Python runs between fork and exec while client threads run).
    os.dup2(listener.fileno(), 3) if listener.fileno() != 3 else None
    os.set_inheritable(3, True)
    env = dict(os.environ, LISTEN_FDS="1", LISTEN_FDNAMES="https")
    process = subprocess.Popen(
        ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', aasad, "serve"] + args,
        pass_fds=(3,), env=env, stdout=subprocess.PIPE, text=True)
    for line in process.stdout:
        if line.startswith("aasad ready"):
            break
    else:
        print("exited", flush=True)
        return
    # Keep draining its output so that it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    child = process
    print("ready", flush=True)


counts = {"ok": 0, "failed": 0, "errors": []}
lock = threading.Lock()
stopping = threading.Event()
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
request = b"GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"


def record(ok, error):
    with lock:
        if ok:
            counts["ok"] += 1
        else:
            counts["failed"] += 1
            if len(counts["errors"]) < 10:
                counts["errors"].append(error)


def client_h2():
    url = "https://a.test:%d/.well-known/apple-app-site-association" % port
    while not stopping.is_set():
        try:
            done = subprocess.run(
                ["curl", "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                 "--resolve", "a.test:%d:127.0.0.1" % port, url],
                capture_output=True, text=True, timeout=30)
            record(done.stdout == "200 2", done.stdout + done.stderr)
        except Exception as e:  # noqa: BLE001 - every failure is counted and named
            record(False, repr(e))


def client():
    while not stopping.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                with context.wrap_socket(raw, server_hostname="a.test") as tls:
                    tls.sendall(request)
                    data = b""
                    while True:
                        chunk = tls.recv(65536)
                        if not chunk:
                            break
                        data += chunk
            ok = data.startswith(b"HTTP/1.1 200")
            error = None if ok else data[:40].decode("latin-1")
        except Exception as e:  # noqa: BLE001 - every failure is counted and named
            ok, error = False, repr(e)
        record(ok, error)


threads = []
start()
for line in sys.stdin:
    command = line.split()
    if not command:
        continue
    if command[0] == "restart":
        child.send_signal(signal.SIGTERM)
        child.wait()
        start()
    elif command[0] in ("load", "load-h2"):
        for _ in range(int(command[1])):
            thread = threading.Thread(target=client if command[0] == "load" else client_h2, daemon=True)
            thread.start()
            threads.append(thread)
    elif command[0] == "report":
        stopping.set()
        for thread in threads:
            thread.join()
        print(json.dumps(counts), flush=True)
if child is not None:
    child.send_signal(signal.SIGTERM)
    child.wait()
