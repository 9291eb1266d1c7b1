#!/usr/bin/env python3
"""What the server's HPACK table size means for a client (Python's h2), for aasad's HTTP/2 tests.
Connects to 127.0.0.1:PORT (TLS, ALPN h2, SNI HOST) and sends a GET of PATH with a 3,000-byte
user-agent before it has seen the server's SETTINGS (its encoder may index the value then). Once
that is answered and the server's SETTINGS are acknowledged, sends the same request again on the
same connection. Prints one line of JSON: the SETTINGS_HEADER_TABLE_SIZE the server advertised,
the bytes the second request's HEADERS took on the wire, and both statuses. Each read waits at
most 10 s; talks only to 127.0.0.1.

Usage: h2table.py PORT HOST PATH
"""
import json, socket, ssl, sys, time
import h2.config, h2.connection, h2.events

port, host, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
agent = ("Mozilla/5.0 " + "x" * 4000)[:3000]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # what is checked is HPACK, not the chain
ctx.set_alpn_protocols(["h2"])
sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=host)
assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
headers = [(":method", "GET"), (":scheme", "https"), (":authority", host), (":path", path), ("user-agent", agent)]
settings = {"seen": False, "acked": False}


def request(stream):
    """Sends the request on `stream` and returns (bytes its frames took, status)."""
    conn.send_headers(stream, headers, end_stream=True)
    sent = conn.data_to_send()
    sock.sendall(sent)
    status, deadline = None, time.time() + 10
    while time.time() < deadline:
        data = sock.recv(65536)
        if not data:
            return len(sent), "closed"
        ended = False
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                settings["seen"] = True
            elif isinstance(event, h2.events.SettingsAcknowledged):
                settings["acked"] = True
            elif isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                status = dict(event.headers).get(":status")
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                ended = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                return len(sent), "goaway %d" % event.error_code
        sock.sendall(conn.data_to_send())  # acknowledges the server's SETTINGS
        if ended and settings["seen"]:
            return len(sent), status
    return len(sent), "timeout"


first_bytes, first = request(1)
second_bytes, second = request(3)
print(json.dumps({"header_table_size": conn.remote_settings.header_table_size, "first_bytes": first_bytes,
                  "second_bytes": second_bytes, "statuses": [first, second]}), flush=True)
sock.close()
