#!/usr/bin/env python3
"""Sends one HTTP/2 GET whose :path holds a fragment (which curl and nghttp drop before sending)
to 127.0.0.1:PORT with SNI link.test, and prints each event of that stream: the answer's headers,
or the stream's reset. Bounded: 5 s per socket read.

Usage: h2fragment.py PORT
"""
import socket, ssl, sys
import h2.config, h2.connection, h2.events
port = int(sys.argv[1])
ctx = ssl.create_default_context(); ctx.check_hostname=False; ctx.verify_mode=ssl.CERT_NONE; ctx.set_alpn_protocols(["h2"])
sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname="link.test")
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection(); sock.sendall(conn.data_to_send())
try:
    conn.send_headers(1, [(":method","GET"),(":scheme","https"),(":authority","link.test"),(":path","/apple-app-site-association#x")], end_stream=True)
except Exception as e:
    print("client refused:", e); sys.exit(0)
sock.sendall(conn.data_to_send())
while True:
    data = sock.recv(65536)
    if not data: break
    for ev in conn.receive_data(data):
        print(type(ev).__name__, getattr(ev, "headers", ""), getattr(ev, "error_code", ""))
        if isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)): sys.exit(0)
    sock.sendall(conn.data_to_send())
