#!/usr/bin/env python3
"""Times /metrics scrapes of aasad serving N sites, each with an AASA file.

    scripts/bench-metrics.py BIN [N] [SCRAPES]

Prints how long the server took to be ready and the median and least time of SCRAPES scrapes
(default 9) of N sites (default 100,000). Run it for two binaries in turn to compare.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    scrapes = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    work = tempfile.mkdtemp(prefix="aasad-bench-metrics-")
    try:
        body = json.dumps({"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}})
        for i in range(count):
            site = os.path.join(work, "config", "sites", f"s{i}.test")
            os.makedirs(site)
            with open(os.path.join(site, "apple-app-site-association"), "w") as f:
                f.write(body)
        started = time.monotonic()
        proc = subprocess.Popen([binary, "serve", "--config", os.path.join(work, "config"), "--state", os.path.join(work, "state"),
                                 "--https", "127.0.0.1:0", "--threads", "1", "--admin", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            while True:
                line = proc.stdout.readline().decode()
                if not line:
                    sys.exit("error: the server did not become ready")
                if line.startswith("aasad ready:"):
                    break
            ready = time.monotonic() - started
            admin = dict(part.split("=", 1) for part in line.split()[2:])["admin"]
            times = []
            for _ in range(scrapes):
                before = time.perf_counter()
                urllib.request.urlopen(f"http://{admin}/metrics", timeout=60).read()
                times.append(time.perf_counter() - before)
        finally:
            proc.terminate()
            proc.wait()
        print(f"{count} sites: ready in {ready:.1f} s; /metrics median {statistics.median(times) * 1000:.1f} ms, "
              f"least {min(times) * 1000:.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
