"""Socket activation as systemd does it, for tests: holds a listening socket and runs aasad with
it passed as descriptor 3 (LISTEN_FDS=1, LISTEN_FDNAMES=https, LISTEN_PID), restarting it on
command while clients keep connecting, so that a test can count what a restart refused.

Usage: socket_activation.py AASAD ARGS...   (the serve arguments, without --https)
Prints "port N" once bound and "ready" whenever a process is ready. Reads commands on stdin:
  restart   SIGTERM the running process, wait for it, start a new one (systemctl restart)
  load N    start N client threads making new TLS connections (HTTP/1.1), each one GET, in a loop
  load-h2 N the same with curl over HTTP/2
  load-keepalive N  N clients each asking again and again on one kept-alive connection
  load-h2-keepalive N  the same over HTTP/2 (one stream after another on one connection)
  answers N wait until the clients have had N more good answers (30 s at most); prints "answered"
            (or "no answers"): the load has run against the process serving now
  report    stop the clients and print {"ok": n, "failed": n, "retried": n, "errors": [...]} as one
            line (load_clients.py)
"""
import os
import signal
import socket
import subprocess
import sys
import threading

from load_clients import Load

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


load = Load(port)
start()
for line in sys.stdin:
    command = line.split()
    if not command:
        continue
    if command[0] == "restart":
        child.send_signal(signal.SIGTERM)
        child.wait()
        start()
    elif load.command(command):
        pass
if child is not None:
    child.send_signal(signal.SIGTERM)
    child.wait()
