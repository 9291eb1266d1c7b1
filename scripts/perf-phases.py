#!/usr/bin/env python3
"""Where a start's CPU goes, from `perf script -F tid,time,ip,sym` of scripts/bench-start.sh's
PERF_OUT: each sample is given the phase of the load it was under (the first frame of PHASES found
in its stack) and counted for the start's own thread (the thread with most samples) or the others.

  perf-phases.py TEXT                        seconds per phase, start's thread and the others
  perf-phases.py TEXT --timeline [STEP]      samples per phase per STEP seconds (default 0.25)
  perf-phases.py TEXT --symbols WHO PHASE [FROM TO]
                                             inclusive and leaf symbols of one phase (WHO: main or
                                             workers; PHASE: a name below or all), pipe through
                                             `swift demangle --simplified`
Seconds assume perf's -F 499."""
import collections
import re
import sys

PHASES = [("directoriesFirst", "ConfigLoaderO16directoriesFirst"), ("examine", "ConfigLoaderO7examine"),
          ("update", "RegistryC6update"), ("publish", "RegistryC7publish"), ("resolve", "HostOwnershipV7resolve"),
          ("watch", "ConfigWatcher"), ("admin", "LockedRegistry"), ("adminview", "AdminView"),
          ("remember", "ValidityCacheV8remember"), ("apply", "RegistryC5apply"), ("start", "DaemonAAC5start")]
RATE = 499


def samples(path):
    out, tid, when, stack = [], None, 0.0, []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if tid:
                out.append((tid, when, stack))
            tid, stack = None, []
            continue
        head = re.match(r"^\s*(\d+)\s+([\d.]+):\s*$", line)
        if head:
            tid, when = head.group(1), float(head.group(2))
        else:
            parts = line.strip().split(None, 1)
            stack.append(parts[1] if len(parts) > 1 else parts[0])
    if tid:
        out.append((tid, when, stack))
    return out


def phase(stack):
    text = " ".join(stack)
    return next((name for name, pattern in PHASES if pattern in text), "other")


def symbol(frame):
    return re.sub(r"\+0x[0-9a-f]+", "", re.sub(r"^[0-9a-f]+ ", "", frame).split(" (")[0])


def main():
    found = samples(sys.argv[1])
    if not found:
        sys.exit("no samples")
    main_thread = collections.Counter(tid for tid, _, _ in found).most_common(1)[0][0]
    first = min(when for _, when, _ in found)
    args = sys.argv[2:]
    if args and args[0] == "--timeline":
        step = float(args[1]) if len(args) > 1 else 0.25
        mains, others = collections.defaultdict(collections.Counter), collections.Counter()
        for tid, when, stack in found:
            bucket = int((when - first) / step)
            if tid == main_thread:
                mains[bucket][phase(stack)] += 1
            else:
                others[bucket] += 1
        for bucket in sorted(set(mains) | set(others)):
            top = " ".join(f"{k}:{v}" for k, v in mains[bucket].most_common(3))
            print(f"{bucket * step:7.2f} main={sum(mains[bucket].values()):4d} workers={others[bucket]:4d}  {top}")
    elif args and args[0] == "--symbols":
        who, wanted = args[1], args[2]
        low, high = (float(args[3]), float(args[4])) if len(args) > 4 else (0, float("inf"))
        inclusive, leaf, count = collections.Counter(), collections.Counter(), 0
        for tid, when, stack in found:
            if (tid == main_thread) != (who == "main") or not low <= when - first < high:
                continue
            if wanted != "all" and phase(stack) != wanted:
                continue
            count += 1
            for name in {symbol(frame) for frame in stack}:
                inclusive[name] += 1
            if stack:
                leaf[symbol(stack[0])] += 1
        print(f"samples {count} = {count / RATE:.2f} s")
        for name, n in inclusive.most_common(45):
            print(f"{n / RATE:.3f} {name}")
        print("-- leaf")
        for name, n in leaf.most_common(25):
            print(f"{n / RATE:.3f} {name}")
    else:
        for who in ("main", "workers"):
            mine = [stack for tid, _, stack in found if (tid == main_thread) == (who == "main")]
            print(f"== {who} {len(mine) / RATE:.2f} s")
            for name, n in collections.Counter(phase(stack) for stack in mine).most_common():
                print(f"  {name:18s} {n / RATE:.2f} s")


main()
