"""The line `aasad serve` prints once it listens, for the Python scripts that start a server:

    aasad ready: https=127.0.0.1:8443,[::1]:8443 http= admin=127.0.0.1:9100 api=off

Sources/Daemon/Daemon.swift writes it. `read_ready(stream)` reads a started server's stdout up to
that line and returns its fields as a dictionary (None when the stream ends or `seconds` pass
first); `https_port(fields)` is the port of its first HTTPS listener.
"""
import os
import select
import time

# Longest line kept: the ready line is about a hundred bytes; a longer one (a server printing
# without end) is skipped, not gathered.
MAXIMUM_LINE = 4096


def read_ready(stream, seconds=60):
    """Reads the pipe under `stream` (a Popen's stdout, nothing read from it yet) a byte at a
    time, each read after poll says one is waiting, at most `seconds` in all: readline blocked
    past any deadline on a server that prints nothing, or half a line, and keeps its pipe open.
    A byte at a time so that nothing after the ready line is taken from the stream."""
    fd = stream.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + seconds
    line = bytearray()
    too_long = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(max(1, int(left * 1000))):
            return None
        byte = os.read(fd, 1)
        if not byte:
            return None
        if byte != b"\n":
            if len(line) < MAXIMUM_LINE:
                line += byte
            else:
                too_long = True
            continue
        text = line.decode(errors="replace")
        line.clear()
        if not too_long and text.startswith("aasad ready:"):
            return dict(part.split("=", 1) for part in text.split()[2:] if "=" in part)
        too_long = False


def https_port(fields):
    return int(fields["https"].split(",")[0].rsplit(":", 1)[1])
