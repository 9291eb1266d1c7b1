#!/usr/bin/env python3
"""Sums the fuzz ledger (Fuzz/ledger.tsv) into the running totals docs/reliability.md shows.

  scripts/fuzz-ledger.py                 prints the totals table (Markdown)
  scripts/fuzz-ledger.py --update FILE   rewrites the table between FILE's ledger markers
  scripts/fuzz-ledger.py --check FILE    exits 1 when FILE's table is not the ledger's (CI)
  scripts/fuzz-ledger.py --append ...    adds one run (scripts/fuzz.sh calls it after each run)
"""
import argparse
import datetime
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEDGER = os.path.join(ROOT, "Fuzz", "ledger.tsv")
BEGIN = "<!-- fuzz-ledger:begin (scripts/fuzz-ledger.py --update docs/reliability.md) -->"
END = "<!-- fuzz-ledger:end -->"
COLUMNS = ["date", "commit", "target", "seconds", "inputs", "exec_per_s", "cov", "ft", "corpus", "added", "result", "note"]


def clean(text):
    """A ledger cell: no tab, line break or other control character, whatever a log held."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", str(text)).strip() or "-"


def rows():
    with open(LEDGER, encoding="utf-8") as ledger:
        lines = [line.rstrip("\n") for line in ledger if line.strip() and not line.startswith("#")]
    header, body = lines[0].split("\t"), lines[1:]
    if header != COLUMNS:
        sys.exit(f"{LEDGER}: the header is not {COLUMNS}")
    result = []
    for number, line in enumerate(body, start=2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            sys.exit(f"{LEDGER}: run {number} has {len(cells)} columns, not {len(COLUMNS)}")
        result.append(dict(zip(COLUMNS, cells)))
    return result


def number(cell):
    return int(cell) if re.fullmatch(r"[0-9]+", cell) else None


def table():
    totals = {}
    for row in rows():
        entry = totals.setdefault(row["target"], {"runs": 0, "inputs": 0, "seconds": 0, "cov": None, "last": "", "findings": 0})
        entry["runs"] += 1
        entry["inputs"] += number(row["inputs"]) or 0
        entry["seconds"] += number(row["seconds"]) or 0
        cov = number(row["cov"])
        if cov is not None and row["date"] >= entry["last"]:
            entry["cov"] = cov
        entry["last"] = max(entry["last"], row["date"])
        if row["result"] != "clean":
            entry["findings"] += 1
    out = [
        "| target | runs | inputs in all | latest coverage (edges) | last run | runs that kept a fail case |",
        "|---|---|---|---|---|---|",
    ]
    for target in sorted(totals):
        entry = totals[target]
        cov = f"{entry['cov']:,}" if entry["cov"] is not None else "-"
        out.append(f"| `{target}` | {entry['runs']} | {entry['inputs']:,} | {cov} | {entry['last'][:10]} | {entry['findings']} |")
    return "\n".join(out)


def replace(text):
    if BEGIN not in text or END not in text:
        sys.exit(f"the file has no ledger markers ({BEGIN} … {END})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", metavar="FILE")
    parser.add_argument("--check", metavar="FILE")
    parser.add_argument("--append", nargs=len(COLUMNS) - 1, metavar="CELL", help="commit target seconds inputs exec_per_s cov ft corpus added result note")
    args = parser.parse_args()
    if args.append:
        cells = [datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M")] + [clean(c) for c in args.append]
        with open(LEDGER, "a", encoding="utf-8") as ledger:
            ledger.write("\t".join(cells) + "\n")
        rows()  # the line just written must read back
    elif args.update:
        with open(args.update, encoding="utf-8") as f:
            text = f.read()
        with open(args.update, "w", encoding="utf-8") as f:
            f.write(replace(text))
    elif args.check:
        with open(args.check, encoding="utf-8") as f:
            text = f.read()
        if replace(text) != text:
            sys.exit(f"{args.check}: the fuzz totals differ from Fuzz/ledger.tsv; run scripts/fuzz-ledger.py --update {args.check}")
    else:
        print(table())


if __name__ == "__main__":
    main()
