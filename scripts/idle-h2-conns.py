#!/usr/bin/env python3
"""idle-h2-conns.py ADDR PORT HOST COUNT HOLD_S [PATH]

The HTTP/2 twin of shared/bench/idle-conns.py, with the same output: opens COUNT TLS connections
to ADDR:PORT (SNI and :authority = HOST, ALPN h2, no certificate check), sends the connection
preface and one GET on stream 1, reads until that stream's END_STREAM, acknowledges the server's
SETTINGS, and holds them all idle. Prints "ready open=N failed=M" once every connection has its
answer, then "closing open=N" after HOLD_S seconds (or at once on SIGTERM). Frames are built by
hand (RFC 9113 §4.1, HPACK RFC 7541 §6) so that nothing beyond the standard library is needed.
Everything is bounded in time: the opening phase stops after 120 s."""
import asyncio
import signal
import ssl
import struct
import sys

OPEN_BUDGET_S = 120
IN_FLIGHT = 100  # handshakes at once, to stay within the listen backlog
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY = 0, 1, 4, 7
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(index, value):
    """A literal field without indexing, its name from the static table (RFC 7541 §6.2.2)."""
    value = value.encode()
    assert index < 15 and len(value) < 127
    return bytes([index, len(value)]) + value


async def one(addr, port, host, path, ctx, sem, conns):
    async with sem:
        reader, writer = await asyncio.open_connection(addr, port, ssl=ctx, server_hostname=host)
        if writer.get_extra_info("ssl_object").selected_alpn_protocol() != "h2":
            raise RuntimeError("the server did not select h2")
        # :method GET (static 2), :scheme https (static 7), :path, :authority.
        block = bytes([0x82, 0x87]) + literal(4, path) + literal(1, host)
        writer.write(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_STREAM | END_HEADERS, 1, block))
        done = False
        while not done:
            head = await reader.readexactly(9)
            length = int.from_bytes(head[:3], "big")
            kind, flags, stream = head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            await reader.readexactly(length)
            if kind == SETTINGS and not flags & ACK:
                writer.write(frame(SETTINGS, ACK, 0))
            elif kind == GOAWAY:
                raise RuntimeError("GOAWAY")
            elif kind in (DATA, HEADERS) and stream == 1 and flags & END_STREAM:
                done = True
        await writer.drain()
        conns.append(writer)


async def main():
    addr, port, host, count, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    path = sys.argv[6] if len(sys.argv) > 6 else "/.well-known/apple-app-site-association"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sem = asyncio.Semaphore(IN_FLIGHT)
    conns = []
    tasks = [one(addr, port, host, path, ctx, sem, conns) for _ in range(count)]
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), OPEN_BUDGET_S)
    failed = [r for r in results if isinstance(r, BaseException)]
    print(f"ready open={len(conns)} failed={len(failed)}", flush=True)
    if failed:
        print(f"first error: {failed[0]!r}", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), hold)
    except asyncio.TimeoutError:
        pass
    alive = sum(1 for w in conns if not w.is_closing() and not w.transport.is_closing())
    print(f"closing open={alive}", flush=True)
    for w in conns:
        w.transport.abort()


if __name__ == "__main__":
    asyncio.run(main())
