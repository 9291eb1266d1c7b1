#!/usr/bin/env python3
"""The admin listener while /sites renders: render time and CPU at N sites, and /healthz latency
meanwhile.

Starts `aasad serve` on a generated tree (scripts/bench-reload.py --tree=DIR makes one; its state/
is not touched: a state directory of its own is used), renders /sites once, then for each round:
one request with User-Agent AASA-Bot (the fetch log changes, so /sites must render again), then
GET /sites on one connection while /healthz is asked on new connections every 20 ms until it
ends. Prints per round the /sites wall time, the server's CPU seconds (user + system) over it,
and the /healthz latencies (median, worst); then medians over the rounds. Everything on 127.0.0.1.

Usage: AASAD=PATH scripts/bench-admin.py TREE [ROUNDS]   (build first: swift build -c release --product aasad)
"""
import http.client, os, re, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

tree = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
binary = os.environ.get("AASAD") or subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip() + "/aasad"
state = tempfile.mkdtemp(prefix="aasad-admin-bench-")

def cpu(pid):
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

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
        probes = []
        def poll():
            while not done.is_set():
                t = time.time()
                status, _ = get(admin, "/healthz")
                probes.append((time.time() - t, status))
                done.wait(0.02)
        poller = threading.Thread(target=poll)
        c0, t0 = cpu(server.pid), time.time()
        poller.start()
        status, page = get(admin, "/sites", timeout=600)
        wall, used = time.time() - t0, cpu(server.pid) - c0
        done.set()
        poller.join()
        latencies = sorted(p[0] for p in probes)
        statuses = sorted(set(p[1] for p in probes))
        results.append((wall, used, statistics.median(latencies), latencies[-1]))
        print(f"bench=admin round={k} sites_status={status} sites_wall_s={wall:.2f} sites_cpu_s={used:.2f} healthz_n={len(latencies)} "
              f"healthz_median_ms={statistics.median(latencies) * 1000:.1f} healthz_max_ms={latencies[-1] * 1000:.1f} healthz_statuses={statuses}", flush=True)
    med = lambda i: statistics.median(r[i] for r in results)
    print(f"bench=admin median sites_wall_s={med(0):.2f} sites_cpu_s={med(1):.2f} healthz_median_ms={med(2) * 1000:.1f} healthz_max_ms={med(3) * 1000:.1f}", flush=True)
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(state, ignore_errors=True)
