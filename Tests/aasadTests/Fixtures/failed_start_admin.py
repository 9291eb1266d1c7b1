"""A start that fails after its listeners are up, with an admin request already waiting: passes
an admin listener as systemd does (descriptor 3, LISTEN_FDNAMES=admin) holding one connection
that has sent `GET PATH` before aasad starts, and a PID file aasad cannot write.

Usage: failed_start_admin.py AASAD PATH ARGS...   (serve's arguments, without --admin)
Prints "exited N" when aasad exits within 30 s, else "hung" (and kills it).
"""
import os
import socket
import subprocess
import sys
import time

aasad, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
port = listener.getsockname()[1]
client = socket.create_connection(("127.0.0.1", port))
client.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
os.dup2(listener.fileno(), 3) if listener.fileno() != 3 else None
os.set_inheritable(3, True)
env = dict(os.environ, LISTEN_FDS="1", LISTEN_FDNAMES="admin")
process = subprocess.Popen(
    ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', aasad, "serve", "--admin", "127.0.0.1:%d" % port,
     "--pid-file", "/nonexistent-directory/aasad.pid"] + args,
    pass_fds=(3,), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    print("exited", process.wait(timeout=30), flush=True)
except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
    print("hung", flush=True)
