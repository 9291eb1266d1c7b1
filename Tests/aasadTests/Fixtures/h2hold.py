#!/usr/bin/env python3
"""HTTP/2 connections that make a server hold request fields, for aasad's memory-budget tests and
for scripts/bench-h2-memory.sh. Opens CONNS connections to 127.0.0.1:PORT (TLS, ALPN h2, SNI
HOST); on each sends STREAMS HEADERS frames without END_STREAM, each `:method METHOD`,
`:scheme https`, `:path /`, `:authority HOST` and COPIES copies of a UA_BYTES-byte user-agent.
The client's HPACK encoder indexes the user-agent, so each copy after the first is one byte on
the wire. Then it reads what the servers answer until they go quiet, prints one line
`held {json}` (connections refused, streams reset by error code, streams left open; a server that
answers a GET when its header block ends resets the stream with NO_ERROR, code 0), waits for a
line or the end of standard input, closes every connection, prints `closed` and exits.
Bounded in time (each socket operation 10 s); talks only to 127.0.0.1.

Usage: h2hold.py PORT HOST CONNS [COPIES=4] [STREAMS=100] [UA_BYTES=3950] [METHOD=GET]
"""
import json, select, socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions

port, host, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
copies = int(sys.argv[4]) if len(sys.argv) > 4 else 4
streams = int(sys.argv[5]) if len(sys.argv) > 5 else 100
agent = ("Mozilla/5.0 " + "x" * 10000)[: int(sys.argv[6]) if len(sys.argv) > 6 else 3950]
method = sys.argv[7] if len(sys.argv) > 7 else "GET"

ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # what is measured is memory, not the chain
ctx.set_alpn_protocols(["h2"])

held, refused, resets, ended, closed = [], 0, {}, 0, []
for _ in range(count):
    try:
        sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=host)
        if sock.selected_alpn_protocol() != "h2":
            raise ConnectionError("no h2")
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        headers = [(":method", method), (":scheme", "https"), (":path", "/"), (":authority", host)]
        headers += [("user-agent", agent)] * copies
        for k in range(streams):
            conn.send_headers(1 + 2 * k, headers, end_stream=False)
        sock.sendall(conn.data_to_send())
        held.append((sock, conn, set()))
    except (OSError, ssl.SSLError, ConnectionError):
        refused += 1  # closed before or during the handshake

# Read until nothing arrives for a second (at most 10 s): SETTINGS, their ACKs, RST_STREAMs.
quiet_since, deadline = time.time(), time.time() + 10
while held and time.time() - quiet_since < 1 and time.time() < deadline:
    readable, _, _ = select.select([s for s, _, _ in held if s not in closed], [], [], 0.2)
    for sock, conn, reset in held:
        if sock not in readable:
            continue
        quiet_since = time.time()
        try:
            data = sock.recv(65536)
        except (OSError, ssl.SSLError):
            data = b""
        if not data:
            closed.append(sock)  # closed by the server (a holder closed for a newcomer)
            continue
        try:
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.StreamReset) and event.stream_id not in reset:
                    reset.add(event.stream_id)
                    resets[int(event.error_code)] = resets.get(int(event.error_code), 0) + 1
                elif isinstance(event, h2.events.ConnectionTerminated):
                    ended += 1
            sock.sendall(conn.data_to_send())
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            pass

open_streams = sum(streams - len(reset) for s, _, reset in held if s not in closed)
print("held " + json.dumps({"connections": len(held), "refused_connections": refused, "resets": resets,
                            "open_streams": open_streams, "goaway": ended,
                            "closed_by_server": len(closed)}), flush=True)
sys.stdin.readline()
for sock, _, _ in held:
    try:
        sock.close()
    except OSError:
        pass
print("closed", flush=True)
