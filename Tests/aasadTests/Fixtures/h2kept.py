#!/usr/bin/env python3
"""One kept-alive HTTP/2 connection for aasad's certificate tests: connects once with
SNI, then for each line `AUTHORITY PATH` read from standard input sends a request on that same
connection and prints one line, the response status (or `error <why>`). The test changes the
config directory between lines. Each answer waits at most 10 s; talks only to 127.0.0.1.

Usage: h2kept.py PORT SNI
"""
import socket, ssl, sys, time
import h2.config, h2.connection, h2.events

port, sni = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE  # the test checks serving rules, not the chain
ctx.set_alpn_protocols(["h2"])
sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=sni)
assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
print("connected", flush=True)

for line in sys.stdin:
    authority, path = line.split()
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path)],
                      end_stream=True)
    sock.sendall(conn.data_to_send())
    status, done, deadline = None, False, time.time() + 10
    while not done and time.time() < deadline:
        data = sock.recv(65536)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                status = dict(event.headers).get(":status")
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                done = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                print("error goaway", flush=True)
                sys.exit(1)
        sock.sendall(conn.data_to_send())
    print(status if done else "error no answer", flush=True)
