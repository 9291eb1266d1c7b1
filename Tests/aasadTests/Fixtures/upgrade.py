"""In-place upgrades (SIGUSR2) for tests: runs aasad from a symlink in a scratch directory (the
path an operator installs new versions at), with --pid-file, and replaces it on command while
clients keep connecting (load_clients.py), so that a test can count what an upgrade failed.

Usage: upgrade.py SCRATCH AASAD ARGS...   (the serve arguments; the HTTPS listener on 127.0.0.1)
Prints "port N" and "ready PID" once serving. Reads commands on stdin:
  upgrade   SIGUSR2 to the serving process; prints "upgraded OLD NEW" once the new one is ready,
            holds the PID file and the old one has exited ("stuck ..." otherwise)
  break     point the symlink at a program that exits at once (a broken new version)
  missing   point it at a file that does not exist
  mend      point it back at AASAD
  failed    SIGUSR2; prints "kept PID | LOG LINE" once the process says the upgrade failed (the
            line saying so) and still serves with its PID in the PID file
  load N / load-h2 N / load-keepalive N / load-h2-keepalive N / answers N / report   as in
            socket_activation.py
  pid       prints the PID file's content
"""
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

from load_clients import Load

signal.alarm(240)
serving = []  # every process id seen serving: the last one is stopped at the end, whatever ends us

scratch, aasad, args = sys.argv[1], sys.argv[2], sys.argv[3:]
# Upgraded processes are children of the process they replace: become their reaper, so that
# they can be waited for and never outlive the test.
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
link = os.path.join(scratch, "aasad")
broken = os.path.join(scratch, "broken-aasad")
with open(broken, "w") as f:
    f.write("#!/bin/sh\necho 'broken-aasad: exits at once' >&2\nexit 3\n")
os.chmod(broken, 0o755)
pid_file = os.path.join(scratch, "aasad.pid")


def point(target):
    temporary = link + ".new"
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.symlink(target, temporary)
    os.rename(temporary, link)  # as a package manager replaces a binary: atomically


point(aasad)
events = []  # lines from aasad's stdout and stderr
events_changed = threading.Condition()


def follow(stream):
    for line in stream:
        with events_changed:
            events.append(line.rstrip("\n"))
            events_changed.notify_all()


first = subprocess.Popen([link, "serve", "--pid-file", pid_file] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
threading.Thread(target=follow, args=(first.stdout,), daemon=True).start()
threading.Thread(target=follow, args=(first.stderr,), daemon=True).start()


def wait_for(predicate, timeout=60):
    """The first event (from the given index on) that satisfies predicate, or None."""
    deadline = time.time() + timeout
    with events_changed:
        seen = 0
        while time.time() < deadline:
            for line in events[seen:]:
                if predicate(line):
                    return line
            seen = len(events)
            events_changed.wait(0.2)
    return None


def read_pid():
    try:
        with open(pid_file) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    if pid not in serving:
        serving.append(pid)
    return pid


def stop_all(*_):
    """Stops every process seen serving (the launcher's own child included) and waits for them."""
    for pid in reversed(serving):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 20
    while any(alive(pid) for pid in serving) and time.time() < deadline:
        time.sleep(0.05)
    os._exit(0)


# An alarm or a SIGTERM from the test harness must not leave a server behind.
signal.signal(signal.SIGALRM, stop_all)
signal.signal(signal.SIGTERM, stop_all)


def alive(pid):
    # A zombie (exited, not yet reaped) is not alive: reap any child that ended.
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def ready_count():
    with events_changed:
        return sum(1 for line in events if line.startswith("aasad ready"))


ready = wait_for(lambda line: line.startswith("aasad ready"))
if ready is None:
    print("exited", "\n".join(events[-20:]), flush=True)
    sys.exit(1)
port = int(re.search(r"https=127\.0\.0\.1:(\d+)", ready).group(1))
deadline = time.time() + 10
while read_pid() is None and time.time() < deadline:
    time.sleep(0.05)
print("port", port, flush=True)
print("ready", read_pid(), flush=True)
load = Load(port)

for line in sys.stdin:
    command = line.split()
    if not command:
        continue
    if command[0] == "upgrade":
        old = read_pid()
        before = ready_count()
        os.kill(old, signal.SIGUSR2)
        deadline = time.time() + 60
        while time.time() < deadline:
            new = read_pid()
            if ready_count() > before and new not in (None, old) and not alive(old):
                print("upgraded", old, new, flush=True)
                break
            time.sleep(0.05)
        else:
            print("stuck", old, read_pid(), alive(old), "\n".join(events[-20:]), flush=True)
    elif command[0] == "failed":
        old = read_pid()
        with events_changed:
            mark = len(events)
        os.kill(old, signal.SIGUSR2)
        deadline = time.time() + 30
        said = None
        while time.time() < deadline and said is None:
            with events_changed:
                said = next((l for l in events[mark:] if "upgrade failed" in l), None)
                if said is None:
                    events_changed.wait(0.2)
        kept = said and read_pid() == old and alive(old)
        print(("kept %d | %s" % (old, said)) if kept else "not-kept " + repr(said), flush=True)
    elif command[0] == "break":
        point(broken)
        print("broken", flush=True)
    elif command[0] == "missing":
        point(os.path.join(scratch, "no-such-binary"))
        print("missing", flush=True)
    elif command[0] == "mend":
        point(aasad)
        print("mended", flush=True)
    elif command[0] == "pid":
        print(read_pid(), flush=True)
    elif load.command(command):
        pass
    elif command[0] == "log":
        with events_changed:
            print(json.dumps(events), flush=True)

read_pid()
stop_all()
