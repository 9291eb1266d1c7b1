#!/usr/bin/env python3
"""Splits the test suites into groups that scripts/test runs as separate `swift test` processes
at once. Swift Testing runs a process's tests on a pool as wide as the machine's cores, and most
of this project's tests wait (on a server, curl, pebble) rather than compute: on two cores one
process runs two tests at a time with the cores mostly idle. Each group is a --filter regular
expression naming whole suites (the part of a test's identifier before the first '/'), so every
test runs exactly once. Groups are balanced by test count, largest suites first.

Usage: swift test list | scripts/test-groups.py GROUPS   (prints one regular expression a line)
"""
import re
import sys

groups = int(sys.argv[1])
counts = {}
for line in sys.stdin:
    line = line.strip()
    if not line or "/" not in line:
        continue
    suite = line.split("/", 1)[0]
    counts[suite] = counts.get(suite, 0) + 1
if not counts:
    sys.exit("no tests listed")
load = [0] * groups
members = [[] for _ in range(groups)]
for suite, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    i = load.index(min(load))
    load[i] += n
    members[i].append(suite)
for names in members:
    if names:
        print("^(" + "|".join(re.escape(s) for s in sorted(names)) + ")/")
