#!/usr/bin/env python3
"""Checks deploy/monitoring against the running server.

1. `promtool check rules` and `promtool test rules` on the alert rules and their unit tests.
2. Starts aasad (the binary given, on loopback, with automatic certificates and the CDN watch on,
   so that every family /metrics can show is there), sends it a request, scrapes /metrics, and
   checks that every metric name the rules and the Grafana dashboard query is on the page. A
   metric renamed in Sources/Daemon/Metrics.swift, or a typo in a query, fails here.

    scripts/monitoring-test.py [--bin .build/debug/aasad]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

from aasad_ready import https_port, read_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MONITORING = os.path.join(ROOT, "deploy", "monitoring")
RULES = os.path.join(MONITORING, "aasad-alerts.yml")
RULE_TESTS = os.path.join(MONITORING, "aasad-alerts.test.yml")
DASHBOARD = os.path.join(MONITORING, "aasad-dashboard.json")

# PromQL words that are not metric names (operators, modifiers, literals).
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf",
            "nan", "Inf", "NaN", "atan2"}
TOKEN = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[smhdwy]*|[A-Za-z_:][A-Za-z0-9_:]*(?:\s*\()?")


def metric_names(expr):
    """The metric names a PromQL expression selects (Grafana's variables allowed in it)."""
    # Grafana's label_values(METRIC, LABEL) in a variable's query: only METRIC is a metric.
    expr = re.sub(r"label_values\(\s*([^,()]+?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)", r"\1", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', "", expr)  # strings
    expr = re.sub(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*", "", expr)  # Grafana variables
    expr = re.sub(r"\{[^}]*\}", " ", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", " ", expr)  # ranges and subqueries
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)  # label lists
    names = set()
    for token in TOKEN.findall(expr):
        if token[0].isdigit() or token.endswith("(") or token in KEYWORDS:
            continue
        names.add(token)
    return names


def queries():
    """(where, expression) for every rule and every dashboard query and variable."""
    found = []
    with open(RULES) as f:
        for group in yaml.safe_load(f)["groups"]:
            for rule in group["rules"]:
                found.append((f"{os.path.basename(RULES)}: {rule.get('alert') or rule.get('record')}", rule["expr"]))
    with open(DASHBOARD) as f:
        dashboard = json.load(f)

    def panels(items):
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    for panel in panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            found.append((f"{os.path.basename(DASHBOARD)}: {panel['title']} ({target['refId']})", target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            found.append((f"{os.path.basename(DASHBOARD)}: variable {variable['name']}", query))
    return found


def exposed(args):
    """Every metric name on a running aasad's /metrics page (samples and # TYPE lines)."""
    work = tempfile.mkdtemp(prefix="aasad-monitoring-")
    try:
        config = os.path.join(work, "config")
        os.makedirs(os.path.join(config, "sites", "a.test"))
        with open(os.path.join(config, "sites", "a.test", "apple-app-site-association"), "w") as f:
            json.dump({"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}, f)
        # Automatic certificates and the CDN watch on, against addresses where nothing listens
        # (port 9, discard): their families appear, their requests fail, nothing leaves loopback.
        with open(os.path.join(config, "aasad.yaml"), "w") as f:
            f.write("acme:\n  directory: https://127.0.0.1:9/directory\n  storage: %s\n"
                    "cdn-watch:\n  enabled: true\n  url: https://127.0.0.1:9/\n" % os.path.join(work, "acme"))
        log = open(os.path.join(work, "server.log"), "wb")
        proc = subprocess.Popen(
            [args.bin, "serve", "--config", config, "--state", os.path.join(work, "state"), "--https", "127.0.0.1:0",
             "--threads", "1", "--admin", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=log)
        try:
            ready = read_ready(proc.stdout)
            if ready is None:
                log.flush()
                sys.exit("error: aasad did not become ready:\n" + open(os.path.join(work, "server.log")).read()[-3000:])
            https = https_port(ready)
            # One answered request: requests and handshakes are counted once they happened.
            subprocess.run(["curl", "-sk", "-o", "/dev/null", "--connect-to", f"a.test:{https}:127.0.0.1:{https}",
                            f"https://a.test:{https}/.well-known/apple-app-site-association"], check=True, timeout=30)
            admin = ready["admin"]

            def scrape():
                with urllib.request.urlopen(f"http://{admin}/metrics", timeout=10) as response:
                    return response.read().decode()

            names = set()
            for _ in range(100):
                page = scrape()
                names = set()
                for line in page.splitlines():
                    if line.startswith("# TYPE "):
                        names.add(line.split()[2])
                    elif line and not line.startswith("#"):
                        names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
                if "aasad_requests_total" in names:
                    break
                time.sleep(0.1)
            return names
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "debug", "aasad"))
    args = parser.parse_args()
    promtool = shutil.which("promtool")
    if promtool is None:
        sys.exit("error: promtool is not installed (Debian: apt-get install prometheus)")
    for command in (["check", "rules", RULES], ["test", "rules", RULE_TESTS]):
        result = subprocess.run([promtool] + command, capture_output=True, text=True, cwd=MONITORING)
        if result.returncode != 0:
            sys.exit(f"error: promtool {' '.join(command)}:\n{result.stdout}{result.stderr}")
    print(f"monitoring: promtool check rules and test rules pass ({os.path.relpath(RULES, ROOT)})")

    wanted = queries()
    on_page = exposed(args)
    missing = []
    count = set()
    for where, expr in wanted:
        names = metric_names(expr)
        if not names:
            missing.append(f"{where}: no metric in {expr!r}")
        for name in sorted(names):
            count.add(name)
            if name not in on_page:
                missing.append(f"{where}: {name} is not on aasad's /metrics")
    if missing:
        print("error: queries name metrics aasad does not expose:", file=sys.stderr)
        for line in missing:
            print("  " + line, file=sys.stderr)
        sys.exit(1)
    print(f"monitoring: {len(wanted)} queries name {len(count)} metrics, each on aasad's /metrics")


if __name__ == "__main__":
    main()
