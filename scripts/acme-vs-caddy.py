#!/usr/bin/env python3
"""Certificates on demand, aasad beside Caddy's on-demand TLS, against the same pebble.

The same scenario runs against each server in turn, each with a fresh pebble (Let's Encrypt's
test CA, Debian package `pebble`, PEBBLE_VA_NOSLEEP=1, no bad-nonce rejections) and
pebble-challtestsrv resolving every name to 127.0.0.1; both servers listen on the ports pebble
validates (TLS-ALPN-01 and HTTP-01):

1. A random-SNI flood: `--flood` ClientHellos, each with a random name under `flood.test` (a
   name neither server holds; with `--wildcard`, under aasad's wildcard site instead). Counted:
   calls to the `ask` endpoint (a local HTTP server that says yes to the demanded name only),
   orders placed at pebble, and the flood's wall time.
2. A demanded name (`fresh.test`): the time from its first TLS handshake to the first handshake
   that verifies against pebble's issuing root (a client retrying every 50 ms), and the orders
   pebble counts for it.

aasad holds `fresh.test` in its config directory with the order budget's share for names nobody
asked for spent (`orders-per-hour: 4`, three orders of this hour already in `orders.log`, as
another replica's), so only the first SNI gets it ordered. Caddy (Debian's caddy, `on_demand_tls`
with `ask`) orders at the first handshake the `ask` endpoint approves, holding that handshake.

    scripts/acme-vs-caddy.py [--aasad .build/release/aasad] [--flood 10000] [--runs 3] [--wildcard]

`--wildcard` gives aasad a wildcard site (`*.users.test`, `certificates: per-name`) and
`acme.ask` pointing at the same endpoint, and floods names under it: what the `ask` contract for
wildcard children costs. It needs a build with wildcard children on demand; without it aasad
refuses the setting and the run stops with its message.

Not run in CI: each run starts two CAs and two servers and sends 2 x `--flood` handshakes (about
a minute at the default 10,000); the in-process tests (Tests/DaemonServeTests/ACMEDemandServeTests)
check the same properties of aasad against pebble on every run.
"""
import argparse
import http.server
import json
import os
import random
import shutil
import socket
import ssl
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AASA = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}
DEMANDED = "fresh.test"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what, proc=None, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"error: {what} exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"error: {what} did not listen on {port}")


class Ask:
    """The `ask` endpoint (Caddy's contract: GET ?domain=NAME, 200 means yes): yes for `allowed`
    names and names under `allowed_suffix`, 404 for the rest; counts every call."""

    def __init__(self, allowed, allowed_suffix=None):
        self.calls = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                from urllib.parse import parse_qs, urlparse
                domain = parse_qs(urlparse(self.path).query).get("domain", [""])[0]
                with outer.lock:
                    outer.calls += 1
                yes = domain in allowed or (allowed_suffix is not None and domain == "a" + allowed_suffix)
                self.send_response(200 if yes else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self):
        return f"http://127.0.0.1:{self.port}/ask"

    def count(self):
        with self.lock:
            return self.calls

    def stop(self):
        self.server.shutdown()


class Pebble:
    def __init__(self, work):
        self.dir = os.path.join(work, "pebble")
        os.makedirs(self.dir)
        d = self.dir
        run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=pebble test root",
            "-days", "2", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout",
            f"{d}/key.pem", "-out", f"{d}/leaf.csr")
        with open(f"{d}/ext.cnf", "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        run("x509", "-req", "-in", f"{d}/leaf.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", f"{d}/ext.cnf", "-out", f"{d}/cert.pem")
        self.port, self.management = free_port(), free_port()
        self.http_port, self.tls_port = free_port(), free_port()
        dns_port, dns_management = free_port(), free_port()
        with open(f"{d}/pebble.json", "w") as f:
            json.dump({"pebble": {
                "listenAddress": f"127.0.0.1:{self.port}", "managementListenAddress": f"127.0.0.1:{self.management}",
                "certificate": f"{d}/cert.pem", "privateKey": f"{d}/key.pem", "httpPort": self.http_port,
                "tlsPort": self.tls_port, "ocspResponderURL": "", "externalAccountBindingRequired": False}}, f)
        self.dns = subprocess.Popen(
            ["pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", f"127.0.0.1:{dns_port}",
             "-http01", "", "-https01", "", "-tlsalpn01", "", "-management", f"127.0.0.1:{dns_management}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log_path = f"{d}/pebble.log"
        env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT="0")
        self.proc = subprocess.Popen(["pebble", "-config", f"{d}/pebble.json", "-dnsserver", f"127.0.0.1:{dns_port}"],
                                     stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, "pebble", self.proc)
        wait_port(self.management, "pebble's management", self.proc)
        context = ssl.create_default_context(cafile=f"{d}/ca.pem")
        with urllib.request.urlopen(f"https://127.0.0.1:{self.management}/roots/0", context=context, timeout=10) as r:
            root = r.read()
        self.root = f"{d}/issuing-root.pem"
        with open(self.root, "wb") as f:
            f.write(root)
        self.ca = f"{d}/ca.pem"
        self.directory = f"https://127.0.0.1:{self.port}/dir"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def orders(self):
        return self.log().count("Added order ")

    def issued(self):
        return self.log().count("Issued certificate serial")

    def stop(self):
        for proc in (self.proc, self.dns):
            proc.kill()
            proc.wait()


def start_aasad(binary, work, pebble, ask, wildcard):
    config = os.path.join(work, "config")
    storage = os.path.join(work, "acme")
    sites = [DEMANDED] + (["_wildcard_.users.test"] if wildcard else [])
    for site in sites:
        os.makedirs(os.path.join(config, "sites", site))
        with open(os.path.join(config, "sites", site, "apple-app-site-association"), "w") as f:
            json.dump(AASA, f)
    if wildcard:
        with open(os.path.join(config, "sites", "_wildcard_.users.test", "site.yaml"), "w") as f:
            f.write("certificates: per-name\n")
    os.makedirs(storage)
    now = int(time.time())
    with open(os.path.join(storage, "orders.log"), "w") as f:
        f.write("".join(f"{now} other{i}.example\n" for i in range(3)))
    with open(os.path.join(config, "aasad.yaml"), "w") as f:
        f.write(f"acme:\n  directory: {pebble.directory}\n  directory-ca: {pebble.ca}\n  storage: {storage}\n"
                f"  challenges: [tls-alpn-01]\n  email: ops@example.com\n  orders-per-hour: 4\n"
                + (f"  ask: {ask.url()}\n" if wildcard else ""))
    log = open(os.path.join(work, "aasad.log"), "wb")
    proc = subprocess.Popen(
        [binary, "serve", "--config", config, "--state", os.path.join(work, "state"), "--https", f"127.0.0.1:{pebble.tls_port}",
         "--http", f"127.0.0.1:{pebble.http_port}", "--admin", "127.0.0.1:0", "--threads", "2"],
        stdout=subprocess.PIPE, stderr=log)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if line.startswith("aasad ready:"):
            return proc
    proc.kill()
    sys.exit("error: aasad did not become ready:\n" + open(os.path.join(work, "aasad.log")).read()[-3000:])


def start_caddy(work, pebble, ask):
    storage = os.path.join(work, "caddy-storage")
    caddyfile = os.path.join(work, "Caddyfile")
    with open(caddyfile, "w") as f:
        f.write(f"""{{
\tadmin off
\thttp_port {pebble.http_port}
\thttps_port {pebble.tls_port}
\tstorage file_system {storage}
\temail ops@example.com
\tacme_ca {pebble.directory}
\tacme_ca_root {pebble.ca}
\tskip_install_trust
\ton_demand_tls {{
\t\task {ask.url()}
\t}}
}}
https:// {{
\ttls {{
\t\ton_demand
\t}}
\trespond "ok"
}}
""")
    env = dict(os.environ, HOME=work, XDG_DATA_HOME=os.path.join(work, "data"), XDG_CONFIG_HOME=os.path.join(work, "cfg"))
    log = open(os.path.join(work, "caddy.log"), "wb")
    proc = subprocess.Popen(["caddy", "run", "--config", caddyfile, "--adapter", "caddyfile"], stdout=log, stderr=log, env=env)
    wait_port(pebble.tls_port, "caddy", proc)
    return proc


def hello(port, name, timeout=5.0):
    """One TLS handshake with SNI `name`, certificate not checked; whether the server answered."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=name):
                return True
    except (OSError, ssl.SSLError):
        return False


def trusted(port, name, root, timeout=60.0):
    """Whether a handshake for `name` verifies against pebble's issuing root."""
    context = ssl.create_default_context(cafile=root)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=name):
                return True
    except (OSError, ssl.SSLError):
        return False


def flood_names(count, wildcard):
    suffix = ".users.test" if wildcard else ".flood.test"
    rng = random.Random(31)
    return ["".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(12)) + suffix for _ in range(count)]


def scenario(server, args, work):
    pebble = Pebble(work)
    # Yes for the demanded name (and one child under the wildcard); every flood name is a no.
    ask = Ask({DEMANDED}, ".users.test" if args.wildcard else None)
    proc = None
    try:
        if server == "aasad":
            proc = start_aasad(args.aasad, work, pebble, ask, args.wildcard)
        else:
            proc = start_caddy(work, pebble, ask)
        orders_before = pebble.orders()
        port = pebble.tls_port
        start = time.time()
        answered = sum(hello(port, name) for name in flood_names(args.flood, args.wildcard))
        flood_seconds = time.time() - start
        flood_ask = ask.count()
        # Orders placed take a moment after the handshake that caused them.
        time.sleep(2)
        flood_orders = pebble.orders() - orders_before

        first = time.time()
        tries = 0
        while not trusted(port, DEMANDED, pebble.root):
            tries += 1
            if time.time() - first > 120:
                sys.exit(f"error: {server} gave no trusted certificate for {DEMANDED} in 120 s")
            time.sleep(0.05)
        to_trusted = time.time() - first
        # One handshake of a client with the certificate in place, median of 20.
        times = []
        for _ in range(20):
            t = time.time()
            trusted(port, DEMANDED, pebble.root)
            times.append(time.time() - t)
        return {
            "server": server, "flood": args.flood, "answered": answered, "floodSeconds": round(flood_seconds, 2),
            "askCallsInFlood": flood_ask, "ordersInFlood": flood_orders, "secondsToTrusted": round(to_trusted, 2),
            "retries": tries, "ordersForDemanded": pebble.orders() - orders_before - flood_orders,
            "issued": pebble.issued(), "handshakeMedianMs": round(statistics.median(times) * 1000, 2),
        }
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        ask.stop()
        pebble.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.join(ROOT, ".build", "release", "aasad")
    parser.add_argument("--aasad", default=default if os.path.exists(default) else os.path.join(ROOT, ".build", "debug", "aasad"))
    parser.add_argument("--flood", type=int, default=10_000, help="random SNI handshakes per server")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--wildcard", action="store_true", help="flood under aasad's wildcard site, with acme.ask (wildcard children)")
    parser.add_argument("--only", choices=["aasad", "caddy"], help="one server only")
    args = parser.parse_args()
    for tool in ("pebble", "pebble-challtestsrv", "openssl") + (() if args.only == "aasad" else ("caddy",)):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} is not installed (Debian: apt-get install -y pebble caddy)")
    servers = [args.only] if args.only else ["aasad", "caddy"]
    results = []
    for run in range(args.runs):
        for server in servers:
            work = tempfile.mkdtemp(prefix=f"acme-vs-caddy-{server}-")
            try:
                result = scenario(server, args, work)
            finally:
                if os.environ.get("KEEP") is None:
                    shutil.rmtree(work, ignore_errors=True)
                else:
                    print(f"kept {work}", file=sys.stderr)
            result["run"] = run + 1
            results.append(result)
            print(json.dumps(result), flush=True)
    print()
    print("| server | run | to trusted (s) | orders for the name | flood handshakes | flood time (s) | ask calls | orders from flood | handshake median (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['server']} | {r['run']} | {r['secondsToTrusted']} | {r['ordersForDemanded']} | {r['answered']}/{r['flood']} | "
              f"{r['floodSeconds']} | {r['askCallsInFlood']} | {r['ordersInFlood']} | {r['handshakeMedianMs']} |")


if __name__ == "__main__":
    main()
