#!/usr/bin/env python3
"""Splits the test suites into groups that scripts/test runs as separate test processes at once.
Swift Testing runs a process's tests on a pool as wide as the machine's cores, and most of this
project's tests wait (on a server, curl, pebble) rather than compute: on two cores one process
runs two tests at a time with the cores mostly idle. Each group is a --filter regular expression
naming whole suites (the part of a test's identifier before the first '/'), so every test runs
exactly once.

Groups are balanced by each suite's measured wall time alone (WEIGHTS, a table written by
scripts/test-weights.py), longest first, each to the group with the least so far: balanced by test
count instead, one group held both ACME-against-pebble suites and the ownership corpus replay and
ended minutes after the others. A suite not in the table (new, or renamed) weighs its test count
times the table's median seconds per test, so a new suite needs no table change to run.

The suites that run pebble (the ACME test CA: Tests/TestSupport/Pebble.swift), named by SPREAD,
are dealt first, each to the group with the least pebble time so far, and the rest after them:
balanced by total time alone, one group held the five longest pebble suites, whose CA processes
and waits then ran in one test process while the others had none.

Usage: swift test list | scripts/test-groups.py GROUPS [WEIGHTS]   (prints one regular expression a line)
"""
import re
import statistics
import sys

groups = int(sys.argv[1])
weights = {}
if len(sys.argv) > 2:
    with open(sys.argv[2]) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            suite, wall = line.rstrip("\n").split("\t")[:2]
            weights[suite] = float(wall)
counts = {}
for line in sys.stdin:
    line = line.strip()
    if not line or "/" not in line:
        continue
    suite = line.split("/", 1)[0]
    counts[suite] = counts.get(suite, 0) + 1
if not counts:
    sys.exit("no tests listed")
known = [weights[s] / counts[s] for s in counts if s in weights]
per_test = statistics.median(known) if known else 1.0
cost = {s: weights.get(s, n * per_test) for s, n in counts.items()}
# The suites that start pebble (a suite's name after its module's).
SPREAD = re.compile(r"\.(Pebble\w*|ACME\w*ServeTests|CertificateManagerTests|OwnershipACMETests|VerificationServeTests|HTTPSClientTests)$")
load = [0.0] * groups
spread_load = [0.0] * groups
members = [[] for _ in range(groups)]
spread = [s for s in counts if SPREAD.search(s)]
for suite in sorted(spread, key=lambda s: (-cost[s], s)):
    i = min(range(groups), key=lambda g: (spread_load[g], load[g]))
    spread_load[i] += cost[suite]
    load[i] += cost[suite]
    members[i].append(suite)
for suite in sorted(set(counts) - set(spread), key=lambda s: (-cost[s], s)):
    i = load.index(min(load))
    load[i] += cost[suite]
    members[i].append(suite)
for names in members:
    if names:
        print("^(" + "|".join(re.escape(s) for s in sorted(names)) + ")/")
