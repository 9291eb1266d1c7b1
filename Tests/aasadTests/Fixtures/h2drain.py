#!/usr/bin/env python3
"""HTTP/2 clients that end with a graceful stop of the server. Each mode sends
SIGTERM to the server itself at the moment that matters, then reads what the server sends until it
closes, and prints one line: `ok <what happened>` or `fail <why>`. Bounded in count and time;
talks only to 127.0.0.1.

Usage: h2drain.py PORT HOST PATH SERVER_PID MODE [COUNT]
  reset-flood  COUNT requests each followed by RST_STREAM, all in one write, then one normal
               request; after its answer, SIGTERM; prints `ok closed <seconds>` once the server
               has closed the connection.
  slow-reader  COUNT streams for PATH with a tiny receive buffer and windows large enough that
               the server fills its socket; nothing is read until SIGTERM has been sent and
               the server stopped accepting; then everything is read: every frame must parse,
               every stream must end with its whole body, and GOAWAY must arrive whole.
"""
import os, signal, socket, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings
from hyperframe.frame import (Frame, DataFrame, HeadersFrame, SettingsFrame, WindowUpdateFrame, PingFrame, GoAwayFrame,
                              RstStreamFrame)

port, host, path, pid, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
count = int(sys.argv[6]) if len(sys.argv) > 6 else 10
deadline = time.time() + 60

def connect(receive_buffer=None):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    raw.settimeout(10)
    raw.connect(("127.0.0.1", port))
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    sock = ctx.wrap_socket(raw, server_hostname=host)
    assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    return sock, conn

def headers():
    return [(":method", "GET"), (":scheme", "https"), (":authority", host), (":path", path)]

def receive_until_closed(sock, each):
    """Hands each chunk the server sends to EACH until it closes the connection; fails the test
    when it has not closed by the deadline."""
    sock.settimeout(1)
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return
        if not data:
            return
        each(data)
    print("fail the server did not close the connection within 60 s")
    sys.exit(0)

def read_until_closed(sock, conn):
    """Reads until the server closes; every byte goes through h2, which raises on a bad frame."""
    events = []

    def through_h2(data):
        events.extend(conn.receive_data(data))
        out = conn.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except (ConnectionError, ssl.SSLError):
                pass

    receive_until_closed(sock, through_h2)
    return events

def wait_until_not_accepting():
    """Polls until the server's listener refuses connections: the graceful stop has begun."""
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False

if mode == "reset-flood":
    sock, conn = connect()
    conn.initiate_connection()
    stream = 1
    for _ in range(count):
        conn.send_headers(stream, headers(), end_stream=True)
        conn.reset_stream(stream)
        stream += 2
    conn.send_headers(stream, headers(), end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(1)
    status, ended = None, False
    while time.time() < deadline and not ended:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        if not data:
            print("fail closed before answering the normal request"); sys.exit(0)
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                status = dict(event.headers).get(":status")
            if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                ended = True
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    if status != "200":
        print("fail the normal request got %s" % status); sys.exit(0)
    started = time.time()
    os.kill(pid, signal.SIGTERM)
    read_until_closed(sock, conn)
    print("ok closed %.2f" % (time.time() - started))
elif mode == "slow-reader":
    sock, conn = connect(receive_buffer=4096)
    # Windows large enough that only the socket limits what the server sends.
    conn.local_settings = h2.settings.Settings(client=True, initial_values={
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1,
        h2.settings.SettingCodes.MAX_FRAME_SIZE: 16384})
    conn.initiate_connection()
    conn.increment_flow_control_window(2**31 - 1 - 65535)
    streams = [1 + 2 * k for k in range(count)]
    for stream in streams:
        conn.send_headers(stream, headers(), end_stream=True)
    sock.sendall(conn.data_to_send())
    # Wait until the server has filled what the socket holds: the bytes queued for us stop growing.
    import fcntl, struct, termios
    previous, stable = -1, 0
    for _ in range(200):
        queued = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        stable = stable + 1 if queued == previous and queued > 0 else 0
        previous = queued
        if stable >= 5:
            break
        time.sleep(0.02)
    os.kill(pid, signal.SIGTERM)
    if not wait_until_not_accepting():
        print("fail the server kept accepting after SIGTERM"); sys.exit(0)
    # Everything the server sent, as bytes: parsed frame by frame below rather than by h2's
    # connection state machine, which refuses the DATA that legitimately follows a graceful GOAWAY
    # (RFC 9113 §6.8: streams up to its last stream id go on).
    received = bytearray()
    receive_until_closed(sock, received.extend)
    known = (DataFrame, HeadersFrame, SettingsFrame, WindowUpdateFrame, PingFrame, GoAwayFrame, RstStreamFrame)
    body = {stream: 0 for stream in streams}
    ended, goaway, offset = set(), None, 0
    while len(received) - offset >= 9:
        try:
            frame, length = Frame.parse_frame_header(memoryview(received[offset:offset + 9]))
            if length > 16384:
                print("fail a frame header at byte %d claims %d bytes: the frames are garbled" % (offset, length)); sys.exit(0)
            if len(received) - offset - 9 < length:
                break
            frame.parse_body(memoryview(received[offset + 9:offset + 9 + length]))
        except Exception as error:
            print("fail a frame did not parse at byte %d: %r" % (offset, error)); sys.exit(0)
        offset += 9 + length
        if not isinstance(frame, known):
            print("fail unexpected frame %r at byte %d" % (frame, offset)); sys.exit(0)
        if isinstance(frame, (DataFrame, HeadersFrame, RstStreamFrame)) and frame.stream_id not in body:
            print("fail a frame for stream %d, never opened, at byte %d" % (frame.stream_id, offset)); sys.exit(0)
        if isinstance(frame, RstStreamFrame):
            print("fail stream %d reset (error %d)" % (frame.stream_id, frame.error_code)); sys.exit(0)
        if isinstance(frame, DataFrame):
            body[frame.stream_id] += len(frame.data)
        if isinstance(frame, (DataFrame, HeadersFrame)) and "END_STREAM" in frame.flags:
            ended.add(frame.stream_id)
        if isinstance(frame, GoAwayFrame):
            goaway = frame
    if offset != len(received):
        print("fail %d bytes after the last whole frame" % (len(received) - offset)); sys.exit(0)
    if goaway is None:
        print("fail no GOAWAY"); sys.exit(0)
    if ended != set(streams):
        print("fail streams not ended: %s (bytes %s)" % (sorted(set(streams) - ended), body)); sys.exit(0)
    print("ok %d streams of %s bytes, and GOAWAY (error %d, last stream %d)" % (len(streams), sorted(set(body.values())), goaway.error_code, goaway.last_stream_id))
else:
    print("fail unknown mode " + mode)
