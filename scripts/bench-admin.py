#!/usr/bin/env python3
"""The admin listener while /sites renders: render time and CPU at N sites, and /healthz latency
meanwhile.

Starts `aasad serve` on a generated tree (scripts/bench-reload.py --tree=DIR makes one; its state/
is not touched: a state directory of its own is used), renders /sites once, then for each round:
one request with User-Agent AASA-Bot (the fetch log changes, so /sites must render again), then
GET /sites on one connection while /healthz is asked on new connections every 20 ms until it
ends. Prints per round the /sites wall time, the server's CPU seconds (user + system) over it,
and the /healthz latencies (median, worst); then medians over the rounds. Everything on 127.0.0.1.

With --unread=N, then: after a fetch (so the page must render again), N connections each ask for
/sites and never read (receive buffer 4 KB), while /healthz is polled; prints the statuses they got
(read after), the /healthz latencies, the renders' CPU and the server's RSS before and once every
answer was given (the unread bytes it holds). With --slowloris=N: N connections that send a
request head a byte a second while /healthz is polled for ten seconds. With --pipelined=C:N (and
optionally --method=GET): once the page is rendered, C connections each send N pipelined
`HEAD /sites` in one go and never read (receive buffer 4 KB) while /healthz is polled, until the
server's CPU is still for a second; prints the /healthz latencies and the server's CPU seconds.

Usage: AASAD=PATH scripts/bench-admin.py TREE [ROUNDS] [--unread=N] [--slowloris=N] [--pipelined=C:N]   (build first: swift build -c release --product aasad)
"""
import http.client, os, re, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
tree = args[0]
rounds = int(args[1]) if len(args) > 1 else 3
unread = int(options.get("unread", 0))
slowloris = int(options.get("slowloris", 0))
pipelined = [int(x) for x in options["pipelined"].split(":")] if "pipelined" in options else None
method = options.get("method", "HEAD")
binary = os.environ.get("AASAD") or subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip() + "/aasad"
state = tempfile.mkdtemp(prefix="aasad-admin-bench-")

def cpu(pid):
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

def rss(pid):
    return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))

def poll_healthz(port, done):
    """Asks /healthz on new connections every 20 ms until `done`; returns the latencies and statuses."""
    probes = []
    def poll():
        while not done.is_set():
            t = time.time()
            try:
                status, _ = get(port, "/healthz", timeout=10)
            except OSError:
                status = "error"
            probes.append((time.time() - t, status))
            done.wait(0.02)
    thread = threading.Thread(target=poll)
    thread.start()
    return probes, thread

def never_reading(port):
    """A client connected to the admin port with a 4 KB receive buffer, which the run never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s

def until_still(pid):
    """Waits until the server's CPU time stays the same for a second; returns that time."""
    last = -1.0
    while cpu(pid) != last:
        last = cpu(pid)
        time.sleep(1)
    return last

def summary(probes):
    latencies = sorted(p[0] for p in probes)
    return (f"healthz_n={len(latencies)} healthz_median_ms={statistics.median(latencies) * 1000:.1f} "
            f"healthz_max_ms={latencies[-1] * 1000:.1f} healthz_statuses={sorted(set(str(p[1]) for p in probes))}")

def get(port, path, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", path, headers=headers or {"Host": "localhost"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body

server = subprocess.Popen([binary, "serve", "--config", f"{tree}/config", "--https", "127.0.0.1:0", "--http", "127.0.0.1:0",
                           "--admin", "127.0.0.1:0", "--threads", "1", "--state", state, "--log-level", "warning"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    line = server.stdout.readline()
    while line and not line.startswith("aasad ready"):
        line = server.stdout.readline()
    http_port = int(re.search(r"http=[^ ]*:(\d+)", line).group(1))
    admin = int(re.search(r"admin=[^ ]*:(\d+)", line).group(1))
    status, page = get(admin, "/sites", timeout=600)
    sites = page.count(b'"directory"')
    print(f"bench=admin sites={sites} page_bytes={len(page)} status={status}", flush=True)
    results = []
    for k in range(rounds):
        get(http_port, "/.well-known/apple-app-site-association", {"Host": "s1.bench.test", "User-Agent": "AASA-Bot/1.0"})
        done = threading.Event()
        c0, t0 = cpu(server.pid), time.time()
        probes, poller = poll_healthz(admin, done)
        status, page = get(admin, "/sites", timeout=600)
        wall, used = time.time() - t0, cpu(server.pid) - c0
        done.set()
        poller.join()
        latencies = sorted(p[0] for p in probes)
        results.append((wall, used, statistics.median(latencies), latencies[-1]))
        print(f"bench=admin round={k} sites_status={status} sites_wall_s={wall:.2f} sites_cpu_s={used:.2f} {summary(probes)}", flush=True)
    med = lambda i: statistics.median(r[i] for r in results)
    if results: print(f"bench=admin median sites_wall_s={med(0):.2f} sites_cpu_s={med(1):.2f} healthz_median_ms={med(2) * 1000:.1f} healthz_max_ms={med(3) * 1000:.1f}", flush=True)
    if unread:
        get(http_port, "/.well-known/apple-app-site-association", {"Host": "s2.bench.test", "User-Agent": "AASA-Bot/1.0"})
        before, c0 = rss(server.pid), cpu(server.pid)
        done = threading.Event()
        probes, poller = poll_healthz(admin, done)
        clients = []
        for _ in range(unread):
            s = never_reading(admin)
            s.sendall(b"GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\n")
            clients.append(s)
        # Every answer given: the server's CPU stays still for a second.
        last = until_still(server.pid)
        held = rss(server.pid)
        done.set()
        poller.join()
        statuses = {}
        for s in clients:
            s.settimeout(30)
            head = s.recv(12)
            statuses[head.decode(errors="replace")] = statuses.get(head.decode(errors="replace"), 0) + 1
            s.close()
        print(f"bench=admin unread={unread} statuses={statuses} cpu_s={last - c0:.2f} rss_before_kb={before} rss_held_kb={held} {summary(probes)}", flush=True)
    if pipelined:
        conns, asks = pipelined
        c0 = cpu(server.pid)
        done = threading.Event()
        probes, poller = poll_healthz(admin, done)
        clients = [never_reading(admin) for _ in range(conns)]
        request = f"{method} /sites HTTP/1.1\r\nHost: localhost\r\n\r\n".encode() * asks
        # Sent from threads: a server that stops reading (its answers unread) would block a send.
        def send(s):
            try:
                s.sendall(request)
            except OSError:
                pass
        senders = [threading.Thread(target=send, args=(s,)) for s in clients]
        for t in senders: t.start()
        last = until_still(server.pid)
        done.set()
        poller.join()
        for s in clients:
            s.close()
        for t in senders: t.join(timeout=5)
        print(f"bench=admin pipelined={conns}x{asks} method={method} cpu_s={last - c0:.2f} {summary(probes)}", flush=True)
    if slowloris:
        clients = []
        for _ in range(slowloris):
            s = socket.socket()
            s.connect(("127.0.0.1", admin))
            s.sendall(b"GET /sites HTTP/1.1\r\n")
            clients.append(s)
        done = threading.Event()
        probes, poller = poll_healthz(admin, done)
        for _ in range(10):
            for s in clients:
                try:
                    s.send(b"X")
                except OSError:
                    pass
            time.sleep(1)
        done.set()
        poller.join()
        print(f"bench=admin slowloris={slowloris} {summary(probes)}", flush=True)
        for s in clients:
            s.close()
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(state, ignore_errors=True)
