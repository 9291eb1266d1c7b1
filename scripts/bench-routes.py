#!/usr/bin/env python3
"""Server CPU per routed request of aasad (a release build) at 10 and 1,000 routes.

    scripts/bench-routes.py BIN [REQUESTS] [ROUNDS]

For each table, one site `link.test` with an AASA file and a site.yaml of routes, served by BIN
with one worker thread; h2load sends REQUESTS requests (default 200,000; one connection, 10
streams at a time) for the last route's path, and the server's CPU time (utime + stime of its
process, /proc/PID/stat) over the run is divided by the requests: the cost of a request, matching
included, whatever else the machine runs. Each answer is checked first (302 and the route's
Location, with curl). Tables:
  10-routes       /r0/{id} … /r9/{id}; the request is /r9/42
  1000-routes     /r0/{id} … /r999/{id}; the request is /r999/42 (the prefix index finds it)
  64-wildcards    /*x0 … /*x63, every route starting with `/*` (the most site.yaml allows,
                  PreparedRoutes.maximumCandidates): the request /ax63 tries all
                  (a tenth of the requests)
  fallback-only   no routes, the fallback alone (the cost of everything but matching)
Prints one line per table and round, then the median per table.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from aasad_ready import https_port, read_ready

AASA = '{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/app/*"}]}]}}'


def tables():
    def routes(paths):
        return "routes:\n" + "".join(f"  - path: {p}\n    web: {t}\n" for p, t in paths)
    fallback = "fallback:\n  web: https://www.example.com{path}\n"
    yield ("10-routes", fallback + routes((f"/r{i}/{{id}}", f"https://shop.example/r{i}/{{id}}") for i in range(10)),
           "/r9/42", "https://shop.example/r9/42", 1)
    yield ("1000-routes", fallback + routes((f"/r{i}/{{id}}", f"https://shop.example/r{i}/{{id}}") for i in range(1000)),
           "/r999/42", "https://shop.example/r999/42", 1)
    yield ("64-wildcards", fallback + routes((f"/*x{i}", f"https://shop.example/w{i}") for i in range(64)),
           "/ax63", "https://shop.example/w63", 10)
    yield ("fallback-only", fallback, "/r9/42", "https://www.example.com/r9/42", 1)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(binary, work, name, yaml, path, location, requests):
    config = os.path.join(work, name, "config")
    site = os.path.join(config, "sites", "link.test")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "apple-app-site-association"), "w") as f:
        f.write(AASA)
    with open(os.path.join(site, "site.yaml"), "w") as f:
        f.write(yaml)
    proc = subprocess.Popen([binary, "serve", "--config", config, "--state", os.path.join(work, name, "state"),
                             "--https", "127.0.0.1:0", "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        ready = read_ready(proc.stdout)
        if ready is None:
            sys.exit(f"error: {name}: the server did not become ready")
        port = https_port(ready)
        check = subprocess.run(["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                                "--connect-to", f"link.test:{port}:127.0.0.1:{port}", f"https://link.test:{port}{path}"],
                               capture_output=True, text=True)
        if check.stdout != f"302 {location}":
            sys.exit(f"error: {name}: {path} answered {check.stdout!r}, not 302 {location}")
        before = cpu_seconds(proc.pid)
        run = subprocess.run(["h2load", "-n", str(requests), "-c", "1", "-m", "10", "-H", ":authority: link.test",
                              f"https://127.0.0.1:{port}{path}"], capture_output=True, text=True)
        spent = cpu_seconds(proc.pid) - before
        # "status codes: 0 2xx, 200000 3xx, 0 4xx, 0 5xx": every request answered with the redirect.
        codes = re.search(r"status codes: \d+ 2xx, (\d+) 3xx", run.stdout)
        if not codes or int(codes.group(1)) != requests:
            sys.exit(f"error: {name}: h2load: {run.stdout[-600:]}")
        return spent / requests * 1e6
    finally:
        proc.terminate()
        proc.wait()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = tempfile.mkdtemp(prefix="aasad-bench-routes-")
    results = {}
    try:
        for round in range(rounds):
            for name, yaml, path, location, divisor in tables():
                micros = measure(binary, work, f"{name}-{round}", yaml, path, location, max(requests // divisor, 1_000))
                results.setdefault(name, []).append(micros)
                print(f"round={round + 1} table={name} server_cpu_per_request_us={micros:.2f}", flush=True)
        for name, values in results.items():
            print(f"median table={name} server_cpu_per_request_us={statistics.median(values):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
