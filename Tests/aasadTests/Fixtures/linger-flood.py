#!/usr/bin/env python3
"""Sends a request with Connection: close and then keeps sending (4 MB of bytes the server must
drop unread, as RFC 9112 §9.6's lingering close does), reading the response only after a pause.
A server that closes while input is still arriving sends a reset, and the kernel then drops the
part of the response it has not sent yet: with a small receive buffer and a large file, most of
it. Prints the response's status line, whether its body was all there ("whole" or "short") and
how the connection ended ("eof" or "reset"). Talks only to 127.0.0.1; each connect, send and read is bounded by 10 s.

Usage: linger-flood.py PORT HOST
"""
import re, socket, sys, threading, time

port, host = int(sys.argv[1]), sys.argv[2]
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the response cannot all be in flight
sock.settimeout(10)
sock.connect(("127.0.0.1", port))
request = f"GET /apple-app-site-association HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def flood():
    try:
        sock.sendall(request + b"x" * (4 << 20))
    except OSError:
        pass  # the server reset or closed: the reader reports it


sender = threading.Thread(target=flood, daemon=True)
sender.start()
time.sleep(0.5)  # the response waits unread while the server drains what follows it
received, ending = b"", "eof"
try:
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
except ConnectionResetError:
    ending = "reset"
except socket.timeout:
    ending = "timeout"
head, _, body = received.partition(b"\r\n\r\n")
length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
print(head.split(b"\r\n", 1)[0].decode(errors="replace") or "(nothing)")
print("whole" if length and len(body) == int(length.group(1)) else "short")
print(ending)
