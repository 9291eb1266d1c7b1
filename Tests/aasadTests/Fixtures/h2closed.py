#!/usr/bin/env python3
"""h2spec 2.x's stream-state and PRIORITY cases (RFC 9113 §5.1, §5.1.1, §5.3.1, §6.1, §6.3) sent as
raw frames over TLS, for aasad's HTTP/2 conformance tests: the frames h2spec sends, each case on a
connection of its own, so that CI keeps them without h2spec (scripts/h2spec.sh). Frames are built
with hyperframe and header blocks with hpack (Python's h2 refuses to send such frames itself).

Prints one line of JSON: for each case, what the server did first: "goaway CODE", "rst CODE",
"closed" (without either), "open" (nothing within 3 s), or, for a case that waits for a response,
"ended" once it has ended. Each read waits at most 3 s; talks only to 127.0.0.1.

Usage: h2closed.py PORT HOST PATH
"""
import json, socket, ssl, struct, sys, time
from hpack import Encoder
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame, SettingsFrame, WindowUpdateFrame

port, host, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class Client:
    def __init__(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # what is checked is framing, not the chain
        ctx.set_alpn_protocols(["h2"])
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=3), server_hostname=host)
        assert self.sock.selected_alpn_protocol() == "h2", self.sock.selected_alpn_protocol()
        self.encoder = Encoder()
        self.pending = b""
        self.sock.sendall(PREFACE + SettingsFrame(0).serialize())

    def headers(self, stream, end_stream=True, method="GET"):
        frame = HeadersFrame(stream, flags=["END_HEADERS"] + (["END_STREAM"] if end_stream else []))
        frame.data = self.encoder.encode([(":method", method), (":scheme", "https"), (":authority", host), (":path", path)])
        return frame.serialize()

    @staticmethod
    def data(stream):
        return DataFrame(stream, b"test", flags=["END_STREAM"]).serialize()

    @staticmethod
    def reset(stream):
        return RstStreamFrame(stream, error_code=8).serialize()  # CANCEL

    @staticmethod
    def priority(stream, depends_on):
        # By hand: hyperframe refuses to build a PRIORITY frame on stream 0.
        return struct.pack(">I", 5)[1:] + bytes([2, 0]) + struct.pack(">II", stream, depends_on) + bytes([15])

    def send(self, *frames):
        # One write, so one TLS record, per frame, as h2spec writes them: the server may read
        # each on its own, after it answered the one before.
        for frame in frames:
            self.sock.sendall(frame)

    def read_frame(self, deadline):
        """The server's next frame, or None once it closed or `deadline` passed."""
        while True:
            if len(self.pending) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.pending[:9]))
                if len(self.pending) >= 9 + length:
                    frame.parse_body(memoryview(self.pending[9:9 + length]))
                    self.pending = self.pending[9 + length:]
                    if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
                        self.send(SettingsFrame(0, flags=["ACK"]).serialize())
                    return frame
            if time.time() >= deadline:
                return None
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return None
            except (ConnectionError, ssl.SSLError):
                data = b""
            if not data:
                self.closed = True
                return None
            self.pending += data

    def outcome(self, ended_stream=None):
        """What the server does first: an error, or (`ended_stream`) the end of that stream's response."""
        self.closed = False
        deadline = time.time() + 3
        while True:
            frame = self.read_frame(deadline)
            if frame is None:
                return "closed" if self.closed else "open"
            if isinstance(frame, GoAwayFrame):
                return "goaway %d" % frame.error_code
            if isinstance(frame, RstStreamFrame):
                return "rst %d" % frame.error_code
            if ended_stream == frame.stream_id and "END_STREAM" in frame.flags:
                return "ended"


def case(run):
    client = Client()
    try:
        return run(client)
    finally:
        client.sock.close()


def after_response(then):
    """HEADERS with END_STREAM on stream 1, its whole response, then the frames `then` builds."""
    def run(c):
        c.send(c.headers(1))
        first = c.outcome(ended_stream=1)
        if first != "ended":
            return "before the frames: " + first
        c.send(*then(c))
        return c.outcome(ended_stream=3)
    return run


cases = {
    "5.1 #5 DATA on half-closed (remote)": lambda c: (c.send(c.headers(1), c.data(1)), c.outcome())[1],
    "5.1 #6 HEADERS on half-closed (remote)": lambda c: (c.send(c.headers(1), c.headers(1)), c.outcome())[1],
    "5.1 #8 DATA after RST_STREAM": lambda c: (c.send(c.headers(1, end_stream=False), c.reset(1), c.data(1)), c.outcome())[1],
    "5.1 #9 HEADERS after RST_STREAM": lambda c: (c.send(c.headers(1, end_stream=False), c.reset(1), c.headers(1)), c.outcome())[1],
    "5.1 #11 DATA on closed": after_response(lambda c: [c.data(1)]),
    "5.1 #12 HEADERS on closed": after_response(lambda c: [c.headers(1)]),
    "5.1.1 #2 lower stream identifier": lambda c: (c.send(c.headers(5), c.headers(3)), c.outcome())[1],
    "5.3.1 #2 PRIORITY on itself": lambda c: (c.send(c.priority(1, 1)), c.outcome())[1],
    "6.1 #2 DATA after a POST's END_STREAM": lambda c: (c.send(c.headers(1, method="POST"), c.data(1)), c.outcome())[1],
    "6.3 #1 PRIORITY on stream 0": lambda c: (c.send(c.priority(0, 1)), c.outcome())[1],
    # What stays allowed on a stream the client ended (RFC 9113 §5.1): then a request on stream 3.
    "allowed after END_STREAM": after_response(
        lambda c: [WindowUpdateFrame(1, window_increment=1).serialize(), c.priority(1, 0), c.reset(1), c.headers(3)]),
}
print(json.dumps({name: case(run) for name, run in cases.items()}))
