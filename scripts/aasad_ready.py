"""The line `aasad serve` prints once it listens, for the Python scripts that start a server:

    aasad ready: https=127.0.0.1:8443,[::1]:8443 http= admin=127.0.0.1:9100 api=off

Sources/Daemon/Daemon.swift writes it. `read_ready(stream)` reads a started server's stdout up to
that line and returns its fields as a dictionary (None when the stream ends or `seconds` pass
first); `https_port(fields)` is the port of its first HTTPS listener.
"""
import time


def read_ready(stream, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        line = stream.readline()
        if isinstance(line, bytes):
            line = line.decode(errors="replace")
        if not line:
            return None
        if line.startswith("aasad ready:"):
            return dict(part.split("=", 1) for part in line.split()[2:] if "=" in part)
    return None


def https_port(fields):
    return int(fields["https"].split(",")[0].rsplit(":", 1)[1])
