#!/usr/bin/env python3
"""Measures what each test suite costs, for scripts/test-groups.py to balance the groups by.

Each suite runs alone in its own test process (`--filter '^Suite/'`), JOBS at a time; the table
records its wall time and the CPU time (user + system, its servers and clients included) of that
process. The wall time is the weight: a group's processes run two tests at a time (Swift Testing's
pool is as wide as the cores), and most tests wait, so a group lasts about as long as its suites'
wall times together, not their CPU time. Run it after adding slow suites and commit the table:

    swift build --build-tests
    scripts/test-weights.py [--jobs 3] [--out scripts/test-weights.tsv]

A suite missing from the table counts as scripts/test-groups.py's default (see there).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--jobs", type=int, default=3, help="suites measured at once (default 3)")
parser.add_argument("--out", default=os.path.join(here, "test-weights.tsv"))
parser.add_argument("--runner", help="the test bundle (default: SwiftPM's debug bin path)")
parser.add_argument("--only", help="a regular expression: measure only the suites it finds")
args = parser.parse_args()

runner = args.runner
if runner is None:
    bin_path = subprocess.check_output(["swift", "build", "--show-bin-path"], text=True).strip()
    runner = os.path.join(bin_path, "aasadPackageTests.xctest")
listed = subprocess.run([runner, "--testing-library", "swift-testing", "--list-tests"],
                        capture_output=True, text=True, check=True).stdout
suites = {}
for line in listed.splitlines():
    if "/" in line:
        suite = line.split("/", 1)[0]
        suites[suite] = suites.get(suite, 0) + 1
names = sorted(suites)
if args.only:
    names = [s for s in names if re.search(args.only, s)]

results = {}
failed = []
running = {}
pending = list(names)
started = time.monotonic()
while pending or running:
    while pending and len(running) < args.jobs:
        suite = pending.pop(0)
        # Output to a file: a pipe read only at the end would stop a suite that prints more than
        # the pipe holds.
        log = tempfile.TemporaryFile()
        process = subprocess.Popen(
            [runner, "--testing-library", "swift-testing", "--filter", "^" + re.escape(suite) + "/"],
            stdout=log, stderr=subprocess.STDOUT)
        running[process.pid] = (suite, log, time.monotonic())
    pid, status, usage = os.wait4(-1, 0)
    if pid not in running:
        continue
    suite, log, began = running.pop(pid)
    wall = time.monotonic() - began
    log.seek(0)
    output = log.read().decode(errors="replace")
    log.close()
    cpu = usage.ru_utime + usage.ru_stime
    if os.waitstatus_to_exitcode(status) != 0:
        failed.append(suite)
        print(output[-3000:], file=sys.stderr)
    results[suite] = (wall, cpu)
    print(f"{time.monotonic() - started:7.1f}s {suite}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"{suites[suite]} tests", file=sys.stderr, flush=True)

# Keep the rows of suites not measured this time (--only).
rows = {}
if args.only and os.path.exists(args.out):
    with open(args.out) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            suite, wall, cpu = line.rstrip("\n").split("\t")[:3]
            rows[suite] = (float(wall), float(cpu))
rows.update(results)
with open(args.out, "w") as f:
    f.write("# suite\twall seconds alone\tCPU seconds (user+system); scripts/test-weights.py\n")
    for suite in sorted(rows):
        wall, cpu = rows[suite]
        f.write(f"{suite}\t{wall:.1f}\t{cpu:.1f}\n")
total_wall = sum(w for w, _ in results.values())
total_cpu = sum(c for _, c in results.values())
print(f"{len(results)} suites: {total_wall:.0f} s wall alone together, {total_cpu:.0f} s CPU, "
      f"{time.monotonic() - started:.0f} s", file=sys.stderr)
if failed:
    sys.exit("failed: " + ", ".join(failed))
