#!/usr/bin/env python3
"""Sends HTTP/1.1 requests over TLS in pieces that a server reads apart, to check that a
connection holding part of its input (an idle connection's buffers may be released) loses no
byte. TLS runs over memory BIOs, so the test decides which bytes of which record go
out in which TCP segment; a pause between pieces lets the server read the first on its own.
Prints the status codes of the responses, space separated, then exits once the server closes
(the last request says Connection: close). Talks only to 127.0.0.1; bounded by 10 s per read.

Usage: tls-split.py PORT SNI MODE
  record   two pipelined requests in one TLS record, sent as 8 bytes, a pause, the rest, so the
           record is split across reads (inside its header, then inside its body)
  request  a request and half of the next in one record; a pause; the rest and a third request
           in a second record: pipelined requests split across reads, and a partial request
           left idle in the middle
  records  ten pipelined requests, each in a TLS record of its own, sent in one write: records
           the server's TLS reads ahead are not in the socket for epoll to report, and more of
           them than one readiness event's reads
  backlog  five records of 40 pipelined requests each (6 KB in all), sent in one write: with a
           large file, the server answers a record's requests in rounds and waits to write
           between them, the next records read ahead, and must go back to those once it can
  stall    a keep-alive request, then the first byte of the next record and nothing more; prints
           the status, then "closed" when the server closes within 10 s, else "open"
"""
import re, socket, ssl, sys, time

port, sni, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PAUSE_S = 0.3  # long enough for the server to read and process the first piece on its own
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # the test checks byte handling, not the chain
ctx.set_alpn_protocols(["http/1.1"])
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(incoming, outgoing, server_hostname=sni)
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def flush():
    data = outgoing.read()
    if data:
        sock.sendall(data)


def pump():
    data = sock.recv(65536)
    if not data:
        return False
    incoming.write(data)
    return True


while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        flush()
        if not pump():
            sys.exit("the server closed during the handshake")
flush()


def get(path, close=False):
    return f"GET {path} HTTP/1.1\r\nHost: {sni}\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n".encode()


path = "/.well-known/apple-app-site-association"
if mode == "record":
    tls.write(get(path) + get(path, close=True))
    record = outgoing.read()
    sock.sendall(record[:8])
    time.sleep(PAUSE_S)
    sock.sendall(record[8:])
elif mode == "request":
    second = get(path)
    tls.write(get(path) + second[:20])
    flush()
    time.sleep(PAUSE_S)
    tls.write(second[20:] + get(path, close=True))
    flush()
elif mode == "records":
    for i in range(10):
        tls.write(get(path, close=i == 9))
    sock.sendall(outgoing.read())
elif mode == "backlog":
    for r in range(5):
        tls.write(b"".join(get(path, close=r * 40 + i == 199) for i in range(40)))
    sock.sendall(outgoing.read())
elif mode == "stall":
    tls.write(get(path))
    flush()
    tls.write(get(path))
    sock.sendall(outgoing.read()[:1])
else:
    sys.exit(f"unknown mode {mode}")

# A bytearray: appending to bytes copies all of them each time, which for backlog's 15 MB of
# responses was seconds of CPU.
received = bytearray()
closed = False
while True:
    try:
        chunk = tls.read(65536)
        if not chunk:
            break
        received += chunk
    except ssl.SSLWantReadError:
        try:
            if not pump():
                closed = True
                break
        except socket.timeout:
            break
    except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
        closed = True
        break
statuses = [m.decode() for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]
print(" ".join(statuses))
if mode == "stall":
    print("closed" if closed else "open")
