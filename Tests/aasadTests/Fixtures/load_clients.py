"""Client load for the restart and upgrade tests (socket_activation.py, upgrade.py): threads that
keep asking for a site's AASA file while the server behind a port is restarted or replaced, and
count every answer that is not the expected 200 with the expected body.

Kinds: "new" (a new TLS connection per request, HTTP/1.1), "h2" (curl over HTTP/2, a new
connection each time), "keepalive" (HTTP/1.1 requests on one kept-alive TLS connection),
"h2-keepalive" (HTTP/2 requests one after another on one connection, with the h2 library). A
kept-alive connection the server closes while idle is the race RFC 9112 §9.3.1 lets a client
retry an idempotent request for (browsers and curl do): a request that got no byte of an answer
on a reused connection is sent again on a new one and counted under "retried". On HTTP/2 a
stream the server's GOAWAY says it did not process (an id above the last one) is retried the
same way (RFC 9113 §6.8). Anything else that is not the expected answer is "failed".
"""
import json
import socket
import ssl
import subprocess
import threading

PATH = "/.well-known/apple-app-site-association"


def drop(tls):
    """Closes a client's connection, if it has one; None, the client's next connection."""
    if tls is not None:
        tls.close()
    return None


class Load:
    def __init__(self, port, host="a.test"):
        self.port = port
        self.host = host
        self.counts = {"ok": 0, "failed": 0, "retried": 0, "retriedBy": {}, "errors": []}
        self.lock = threading.Lock()
        self.answered = threading.Condition(self.lock)
        self.stopping = threading.Event()
        self.threads = []
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE
        self.expected = None  # the body every answer must carry (the first one seen)

    def record(self, ok, error=None, body=None):
        with self.lock:
            if ok and body is not None:
                if self.expected is None:
                    self.expected = body
                elif body != self.expected:
                    ok, error = False, "another body: %r" % body[:60]
            if ok:
                self.counts["ok"] += 1
                self.answered.notify_all()
            else:
                self.counts["failed"] += 1
                if len(self.counts["errors"]) < 10:
                    self.counts["errors"].append(error)

    def retried(self, kind):
        with self.lock:
            self.counts["retried"] += 1
            self.counts["retriedBy"][kind] = self.counts["retriedBy"].get(kind, 0) + 1

    def start(self, kind, n):
        target = {"new": self.new_connections, "h2": self.h2, "keepalive": self.keepalive,
                  "h2-keepalive": self.h2_keepalive}[kind]
        for _ in range(n):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def wait_for_answers(self, n, timeout=30):
        """Waits until N more requests have been answered well (at most TIMEOUT seconds): the
        load has run against whatever serves now. Whether it got them."""
        with self.answered:
            target = self.counts["ok"] + n
            return self.answered.wait_for(lambda: self.counts["ok"] >= target, timeout)

    KINDS = {"load": "new", "load-h2": "h2", "load-keepalive": "keepalive", "load-h2-keepalive": "h2-keepalive"}

    def command(self, command):
        """Carries out a launcher's load command (load N, load-h2 N, load-keepalive N,
        load-h2-keepalive N, answers N, report), printing its answer; whether it was one."""
        if command[0] in self.KINDS:
            self.start(self.KINDS[command[0]], int(command[1]))
        elif command[0] == "answers":
            print("answered" if self.wait_for_answers(int(command[1])) else "no answers", flush=True)
        elif command[0] == "report":
            print(json.dumps(self.report()), flush=True)
        else:
            return False
        return True

    def report(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join()
        return self.counts

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return self.context.wrap_socket(raw, server_hostname=self.host)

    def request(self, close):
        return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (
            PATH, self.host, "Connection: close\r\n" if close else "")).encode()

    def new_connections(self):
        while not self.stopping.is_set():
            try:
                with self.connect() as tls:
                    tls.sendall(self.request(close=True))
                    data = b""
                    while True:
                        chunk = tls.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                ok = head.startswith(b"HTTP/1.1 200")
                self.record(ok, None if ok else data[:40].decode("latin-1"), body if ok else None)
            except Exception as e:  # noqa: BLE001 - every failure is counted and named
                self.record(False, repr(e))

    def h2(self):
        url = "https://%s:%d%s" % (self.host, self.port, PATH)
        while not self.stopping.is_set():
            try:
                done = subprocess.run(
                    ["curl", "-sk", "--http2", "-w", "\n%{http_code} %{http_version}",
                     "--resolve", "%s:%d:127.0.0.1" % (self.host, self.port), url],
                    capture_output=True, timeout=30)
                body, _, status = done.stdout.rpartition(b"\n")
                ok = status == b"200 2"
                self.record(ok, None if ok else (status + done.stderr).decode("latin-1"), body if ok else None)
            except Exception as e:  # noqa: BLE001 - every failure is counted and named
                self.record(False, repr(e))

    @staticmethod
    def read_response(tls):
        """One response (Content-Length framed); None when the connection ended (closed or reset)
        before any byte of it came; an error when it ended inside it."""
        data = b""
        head = None
        length = 0
        while True:
            try:
                chunk = tls.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                if not data:
                    return None
                raise
            if not chunk:
                if not data:
                    return None
                raise ConnectionError("closed inside a response: %r" % data[:40])
            data += chunk
            if head is None and b"\r\n\r\n" in data:
                head = data.partition(b"\r\n\r\n")[0]
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
            if head is not None:
                body = data.partition(b"\r\n\r\n")[2]
                if len(body) >= length:
                    return head, body[:length], b"\r\nconnection: close" in head.lower()

    def keepalive(self):
        tls, used = None, 0
        while not self.stopping.is_set():
            try:
                if tls is None:
                    tls, used = self.connect(), 0
                try:
                    tls.sendall(self.request(close=False))
                    answer = self.read_response(tls)
                except (BrokenPipeError, ConnectionResetError):
                    answer = None
                if answer is None:
                    if not used:
                        raise ConnectionError("a new connection ended without an answer")
                    # The server closed the kept-alive connection as the request went out.
                    self.retried("keepalive")
                    tls = drop(tls)
                    continue
                head, body, closing = answer
                ok = head.startswith(b"HTTP/1.1 200")
                self.record(ok, None if ok else head[:40].decode("latin-1"), body if ok else None)
                used += 1
                if closing:
                    tls = drop(tls)
            except Exception as e:  # noqa: BLE001 - every failure is counted and named
                self.record(False, repr(e))
                tls = drop(tls)
        drop(tls)

    def h2_keepalive(self):
        import h2.config
        import h2.connection
        import h2.events

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2"])
        tls, connection, used = None, None, 0
        headers = [(":method", "GET"), (":scheme", "https"), (":authority", self.host), (":path", PATH)]
        while not self.stopping.is_set():
            try:
                if tls is None:
                    raw = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                    tls = context.wrap_socket(raw, server_hostname=self.host)
                    if tls.selected_alpn_protocol() != "h2":
                        raise ConnectionError("no h2 in ALPN")
                    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
                    connection.initiate_connection()
                    tls.sendall(connection.data_to_send())
                    used = 0
                    frames = b""  # bytes read, cut at frame boundaries before h2 sees them
                    noticed = False
                stream = connection.get_next_available_stream_id()
                connection.send_headers(stream, headers, end_stream=True)
                tls.sendall(connection.data_to_send())
                status, body, done, refused = None, b"", False, False
                while not done:
                    try:
                        data = tls.recv(65536)
                    except (ConnectionResetError, ssl.SSLError):
                        data = b""
                    if not data:
                        if status is None and used:
                            refused = True  # closed before any answer: as a GOAWAY above this stream
                            break
                        raise ConnectionError("closed inside a stream (status %r)" % status)
                    # The shutdown notice (RFC 9113 §6.8: GOAWAY with the largest stream id) refuses
                    # nothing, but the h2 library closes its state on any GOAWAY and would then
                    # refuse the answer still coming: take it out, and open no stream after it.
                    frames += data
                    data = b""
                    while len(frames) >= 9:
                        length = int.from_bytes(frames[:3], "big")
                        if len(frames) < 9 + length:
                            break
                        frame, frames = frames[:9 + length], frames[9 + length:]
                        last = int.from_bytes(frame[9:13], "big") & 0x7FFFFFFF if length >= 8 else 0
                        if frame[3] == 7 and last == 0x7FFFFFFF:
                            noticed = True
                            continue
                        data += frame
                    if not data:
                        continue
                    for event in connection.receive_data(data):
                        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                            status = dict(event.headers).get(b":status")
                        elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                            body += event.data
                            connection.acknowledge_received_data(event.flow_controlled_length, stream)
                        elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                            done = True
                        elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                            if event.error_code == 7:  # REFUSED_STREAM: never processed
                                refused = True
                                done = True
                            else:
                                raise ConnectionError("stream reset: %r" % event.error_code)
                        elif isinstance(event, h2.events.ConnectionTerminated):
                            if event.last_stream_id is not None and stream > event.last_stream_id:
                                refused = True
                                done = True
                    pending = connection.data_to_send()
                    if pending:
                        tls.sendall(pending)
                if refused:
                    self.retried("h2-keepalive")
                    tls = drop(tls)
                    continue
                ok = status == b"200"
                self.record(ok, None if ok else "h2 status %r" % status, body if ok else None)
                used += 1
                if noticed or connection.state_machine.state == h2.connection.ConnectionState.CLOSED:
                    tls = drop(tls)
            except Exception as e:  # noqa: BLE001 - every failure is counted and named
                self.record(False, repr(e))
                tls = drop(tls)
        drop(tls)
