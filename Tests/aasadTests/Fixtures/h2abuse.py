#!/usr/bin/env python3
"""Misbehaving HTTP/2 clients for aasad's abuse tests. Each mode attacks one
connection and prints one line: `ok <what happened>` when the server defended itself (closed the
connection, refused the stream, or sent GOAWAY), `fail <why>` otherwise. Bounded in count and time;
talks only to 127.0.0.1.

Usage: h2abuse.py PORT HOST MODE   (MODE: rapid-reset, continuation, settings, ping, big-headers, window, concurrency-N,
                                   held-streams[-SECONDS], reset-reopen[-SECONDS])
"""
import socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings
from hyperframe.frame import ContinuationFrame, HeadersFrame

port, host, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
deadline = time.time() + 20

def connect():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname=host)
    assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn

def request_headers(extra=(), method="GET"):
    return [(":method", method), (":scheme", "https"), (":authority", host),
            (":path", "/.well-known/apple-app-site-association")] + list(extra)

def drain(sock, conn, seconds=3):
    """Reads until the server closes or `seconds` pass; returns what happened."""
    sock.settimeout(0.5)
    end = time.time() + seconds
    events = []
    while time.time() < end:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionError, ssl.SSLError):
            return "closed", events
        if not data:
            return "closed", events
        try:
            events += conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            return "protocol-error", events
        out = conn.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except (ConnectionError, ssl.SSLError):
                return "closed", events
        if any(isinstance(e, h2.events.ConnectionTerminated) for e in events):
            return "goaway", events
    return "open", events

sock, conn = connect()
if mode == "rapid-reset":
    # CVE-2023-44487: open and reset streams as fast as possible.
    stream = 1
    try:
        for _ in range(5000):
            conn.send_headers(stream, request_headers(), end_stream=True)
            conn.reset_stream(stream)
            stream += 2
            sock.sendall(conn.data_to_send())
    except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError):
        print("ok closed while flooding"); sys.exit(0)
    state, _ = drain(sock, conn)
    print("ok " + state if state in ("goaway", "closed") else "fail the server kept the connection open after 5000 resets")
elif mode == "continuation":
    # CVE-2024-27316: a header block that never ends.
    conn.send_headers(1, request_headers(), end_stream=True)
    sock.sendall(conn.data_to_send())
    first = HeadersFrame(3, flags=["END_STREAM"])
    first.data = conn.encoder.encode(request_headers())
    payload = first.serialize()
    try:
        for i in range(10000):
            c = ContinuationFrame(3)
            c.data = conn.encoder.encode([("x-flood-%d" % (i % 50), "v" * 100)])
            payload += c.serialize()
            if len(payload) > 65536:
                sock.sendall(payload); payload = b""
    except (ConnectionError, ssl.SSLError):
        print("ok closed while flooding"); sys.exit(0)
    state, _ = drain(sock, conn)
    print("ok " + state if state in ("goaway", "closed", "protocol-error") else "fail endless CONTINUATION accepted")
elif mode in ("settings", "ping"):
    try:
        for i in range(20000):
            if mode == "settings":
                conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100 + i % 5})
            else:
                conn.ping(b"%08d" % i)
            data = conn.data_to_send()
            if data:
                sock.sendall(data)
    except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError, h2.exceptions.TooManyStreamsError):
        print("ok closed while flooding"); sys.exit(0)
    # Never reading the ACKs: the server must not queue them without bound.
    state, _ = drain(sock, conn)
    print("ok " + state if state in ("goaway", "closed") else "ok answered every frame with the queue bounded" if state == "open" else "fail " + state)
elif mode == "big-headers":
    conn.send_headers(1, request_headers([("x-big", "v" * 20000)]), end_stream=True)
    sock.sendall(conn.data_to_send())
    state, events = drain(sock, conn, 2)
    reset = any(isinstance(e, h2.events.StreamReset) and e.stream_id == 1 for e in events)
    answered = any(isinstance(e, h2.events.ResponseReceived) and e.stream_id == 1 for e in events)
    print("ok stream refused" if reset or state in ("goaway", "closed") else "fail a 20 KB header list was answered" if answered else "fail no answer")
elif mode == "window":
    # A client that grants no flow-control window: responses must wait, not be sent.
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sock.sendall(conn.data_to_send())
    for s in range(1, 41, 2):
        conn.send_headers(s, request_headers(), end_stream=True)
    sock.sendall(conn.data_to_send())
    state, events = drain(sock, conn, 2)
    data = [e for e in events if isinstance(e, h2.events.DataReceived) and e.flow_controlled_length > 0]
    print("fail data sent beyond a zero window" if data else "ok no data beyond the window (%s)" % state)
elif mode.startswith("held-streams"):
    # 50 requests whose header blocks end but whose streams never do (no END_STREAM), kept alive
    # by a PING every quarter second: the stream state they hold must not outlive the request
    # timeout just because the connection is never idle.
    # POST: the server answers a GET when its header block ends, so a GET holds nothing.
    wait = float(mode.split("-")[2]) if mode.count("-") == 2 else 15
    for s in range(1, 101, 2):
        conn.send_headers(s, request_headers([("x-pad", "v" * 200)], "POST"), end_stream=False)
    sock.sendall(conn.data_to_send())
    sock.settimeout(0.25)
    end = time.time() + wait
    state = "open"
    while time.time() < end and state == "open":
        try:
            conn.ping(b"keepaliv")
            sock.sendall(conn.data_to_send())
            data = sock.recv(65536)
            if not data:
                state = "closed"
            elif any(isinstance(e, h2.events.ConnectionTerminated) for e in conn.receive_data(data)):
                state = "goaway"
        except socket.timeout:
            continue
        except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError):
            state = "closed"
    print("ok " + state if state != "open" else "fail held streams kept the connection open for %.0f s" % wait)
elif mode.startswith("reset-reopen"):
    # 20 incomplete streams (no END_STREAM) reset every second and opened again in a later
    # write, so that between the two the server holds no incomplete request: the state they
    # hold must still not outlive the request timeout.
    wait = float(mode.split("-")[2]) if mode.count("-") == 2 else 15
    end, state, stream = time.time() + wait, "open", 1
    sock.settimeout(0.2)
    try:
        while time.time() < end and state == "open":
            opened = list(range(stream, stream + 40, 2))
            stream += 40
            for s in opened:  # POST, as in held-streams
                conn.send_headers(s, request_headers([("x-pad", "v" * 200)], "POST"), end_stream=False)
            sock.sendall(conn.data_to_send())
            second = time.time() + 1
            while time.time() < second and state == "open":
                try:
                    data = sock.recv(65536)
                    if not data:
                        state = "closed"
                    elif any(isinstance(e, h2.events.ConnectionTerminated) for e in conn.receive_data(data)):
                        state = "goaway"
                    else:
                        sock.sendall(conn.data_to_send())
                except socket.timeout:
                    pass
            if state == "open":
                for s in opened:
                    conn.reset_stream(s)
                sock.sendall(conn.data_to_send())
                time.sleep(0.2)
    except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError):
        state = "closed"
    print("ok " + state if state != "open" else "fail streams reset and reopened kept the connection for %.0f s" % wait)
elif mode.startswith("concurrency-"):
    # N streams held open at once (a zero window: no response can finish), ignoring the server's
    # SETTINGS_MAX_CONCURRENT_STREAMS (100). Up to the limit all get their response headers; one
    # more ends the connection (nghttp2 treats it as a connection error, RFC 9113 §5.1.2).
    count = int(mode.split("-")[1])
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sock.sendall(conn.data_to_send())
    drain(sock, conn, 0.5)  # take the server's SETTINGS
    conn.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 1000
    conn.remote_settings.acknowledge()
    for s in range(1, 2 * count, 2):
        conn.send_headers(s, request_headers(), end_stream=True)
    sock.sendall(conn.data_to_send())
    state, events = drain(sock, conn, 2)
    answered = {e.stream_id for e in events if isinstance(e, h2.events.ResponseReceived)}
    refused = [e.stream_id for e in events if isinstance(e, h2.events.StreamReset)]
    if count <= 100:
        print("ok all %d answered" % count if len(answered) == count else "fail %d of %d answered (%s)" % (len(answered), count, state))
    else:
        print("ok over the limit: %s" % state if state in ("goaway", "closed") or refused else "fail %d streams accepted" % count)
else:
    print("fail unknown mode " + mode)
