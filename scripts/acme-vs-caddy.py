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
    scripts/acme-vs-caddy.py --check-cleanup    # no CA or server left when a set-up fails

Every process it starts (pebble, pebble-challtestsrv, aasad, caddy) runs in a process group of
its own and is stopped on every way out: a set-up that fails, an exception, Ctrl-C, SIGTERM.

`--wildcard` gives aasad a wildcard site (`*.users.test`, `certificates: per-name`) and
`acme.ask` pointing at the same endpoint, and floods names under it: what the `ask` contract for
wildcard children costs. It needs a build with wildcard children on demand; without it aasad
refuses the setting and the run stops with its message.

Not run in CI: each run starts two CAs and two servers and sends 2 x `--flood` handshakes (about
a minute at the default 10,000); the in-process tests (Tests/DaemonServeTests/ACMEDemandServeTests)
check the same properties of aasad against pebble on every run.
"""
import argparse
import atexit
import http.server
import json
import os
import random
import shutil
import signal
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

# Every process this script starts, each in a process group of its own (start_new_session), so
# that stopping it stops what it started too. Stopped on every way out: a set-up that fails (a
# CA or server that never listens, sys.exit), an exception, Ctrl-C, SIGTERM or SIGHUP.
CHILDREN = []
# A signal that came while a process was being started: acted on once it is in CHILDREN (a
# SystemExit raised inside Popen, after the fork, would lose the process it started).
PENDING = []
SPAWNING = False


def spawn(argv, **kwargs):
    global SPAWNING
    SPAWNING = True
    try:
        proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
        CHILDREN.append(proc)
    finally:
        SPAWNING = False
    if PENDING:
        sys.exit(128 + PENDING[0])
    return proc


def stop(proc, grace=20):
    """SIGTERM to the process's group, SIGKILL to the group after `grace` seconds, then reaped.
    The leader is only looked at (WNOWAIT) until the group is killed, so its id, which names the
    group, cannot be reused by another process meanwhile. A leader reaped already (it exited
    during a wait) still has its group signalled: what it started may live on in it, and Linux
    gives no new process an id still in use as a process group's."""
    deadline = time.time() + grace
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        while proc.returncode is None and time.time() < deadline and \
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, ChildProcessError, PermissionError):
        pass
    proc.wait()
    if proc in CHILDREN:
        CHILDREN.remove(proc)


def stop_all():
    # Once cleanup starts, a second Ctrl-C or SIGTERM must not cut it short.
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    for proc in list(reversed(CHILDREN)):
        stop(proc, grace=5)


def on_signal(signum, frame):
    # Through SystemExit, so that every `finally` runs and then atexit stops what is left.
    if SPAWNING:
        PENDING.append(signum)
        return
    sys.exit(128 + signum)


atexit.register(stop_all)
for _sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(_sig, on_signal)

AASA = {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}
DEMANDED = "fresh.test"
# With --wildcard, the demanded name is a child of aasad's wildcard site (`*.users.test`).
CHILD = "a.users.test"


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
    names, 404 for the rest; counts every call."""

    def __init__(self, allowed):
        self.calls = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                from urllib.parse import parse_qs, urlparse
                domain = parse_qs(urlparse(self.path).query).get("domain", [""])[0]
                with outer.lock:
                    outer.calls += 1
                yes = domain in allowed
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
        self.dns = self.proc = None
        try:
            self.start(d, dns_port, dns_management)
        except BaseException:
            self.stop()
            raise

    def start(self, d, dns_port, dns_management):
        self.dns = spawn(
            ["pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", f"127.0.0.1:{dns_port}",
             "-http01", "", "-https01", "", "-tlsalpn01", "", "-management", f"127.0.0.1:{dns_management}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.log_path = f"{d}/pebble.log"
        env = dict(os.environ, PEBBLE_VA_NOSLEEP="1", PEBBLE_WFE_NONCEREJECT="0")
        self.proc = spawn(["pebble", "-config", f"{d}/pebble.json", "-dnsserver", f"127.0.0.1:{dns_port}"],
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
            if proc is not None:
                stop(proc, grace=5)


def start_aasad(binary, work, pebble, ask, wildcard):
    config = os.path.join(work, "config")
    storage = os.path.join(work, "acme")
    sites = [DEMANDED] + (["*.users.test"] if wildcard else [])
    for site in sites:
        os.makedirs(os.path.join(config, "sites", site))
        with open(os.path.join(config, "sites", site, "apple-app-site-association"), "w") as f:
            json.dump(AASA, f)
    if wildcard:
        with open(os.path.join(config, "sites", "*.users.test", "site.yaml"), "w") as f:
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
    proc = spawn(
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
    stop(proc)
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
    proc = spawn(["caddy", "run", "--config", caddyfile, "--adapter", "caddyfile"], stdout=log, stderr=log, env=env)
    try:
        wait_port(pebble.tls_port, "caddy", proc)
    except BaseException:
        stop(proc)
        raise
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
    pebble = ask = proc = None
    try:
        pebble = Pebble(work)
        # Yes for the demanded name (and the child under the wildcard); every flood name is a no.
        demanded = CHILD if args.wildcard else DEMANDED
        ask = Ask({DEMANDED, CHILD})
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
        while not trusted(port, demanded, pebble.root):
            tries += 1
            if time.time() - first > 120:
                sys.exit(f"error: {server} gave no trusted certificate for {demanded} in 120 s")
            time.sleep(0.05)
        to_trusted = time.time() - first
        # One handshake of a client with the certificate in place, median of 20.
        times = []
        for _ in range(20):
            t = time.time()
            trusted(port, demanded, pebble.root)
            times.append(time.time() - t)
        return {
            "server": server, "demanded": demanded, "askCalls": ask.count(), "flood": args.flood, "answered": answered, "floodSeconds": round(flood_seconds, 2),
            "askCallsInFlood": flood_ask, "ordersInFlood": flood_orders, "secondsToTrusted": round(to_trusted, 2),
            "retries": tries, "ordersForDemanded": pebble.orders() - orders_before - flood_orders,
            "issued": pebble.issued(), "handshakeMedianMs": round(statistics.median(times) * 1000, 2),
        }
    finally:
        if proc is not None:
            stop(proc)
        if ask is not None:
            ask.stop()
        if pebble is not None:
            pebble.stop()


def check_cleanup():
    """Runs this script with stand-ins for pebble-challtestsrv and pebble (each records its pid
    and sleeps; pebble exits at once or never listens) and checks that no process it started
    is left: when pebble's set-up fails, when the script is sent SIGTERM during it, and when pebble's
    leader exits (and is reaped by the script's wait) leaving a grandchild in its group. Stand-ins
    still alive afterwards (a failure) are killed by the pids they recorded."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="acme-vs-caddy-cleanup-") as work:
        fake = os.path.join(work, "bin")
        os.makedirs(fake)
        # The challenge server's stand-in leaves a grandchild in its group, as a real server's
        # helper would: it must be stopped too, even once the stand-in itself is reaped.
        grandchild = 'sleep 600 & echo $! >> "$FAKE_PIDS"; wait'
        # pebble's stand-in exits at once, hangs, or leaves a grandchild in its group and exits:
        # the script reaps that leader while it waits for pebble to listen, before any cleanup,
        # and the group must still be stopped (by its id, which the grandchild keeps in use).
        pebble = ('[ -n "$FAKE_PEBBLE_HANGS" ] && exec sleep 600\n'
                  '[ -n "$FAKE_PEBBLE_LEAVES" ] && { sleep 600 & echo $! >> "$FAKE_PIDS"; }\nexit 1')
        for name, then in (("pebble-challtestsrv", grandchild), ("pebble", pebble)):
            with open(os.path.join(fake, name), "w") as f:
                f.write(f'#!/bin/sh\necho $$ >> "$FAKE_PIDS"\n{then}\n')
            os.chmod(os.path.join(fake, name), 0o755)
        for case, hangs, leaves, started in (("pebble exits during set-up", "", "", 3), ("SIGTERM during set-up", "1", "", 3),
                                             ("pebble's leader reaped, its grandchild left", "", "1", 4)):
            pids_file = os.path.join(work, "pids")
            open(pids_file, "w").close()
            env = dict(os.environ, PATH=fake + os.pathsep + os.environ["PATH"], FAKE_PIDS=pids_file, FAKE_PEBBLE_HANGS=hangs,
                       FAKE_PEBBLE_LEAVES=leaves)
            run = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--only", "aasad", "--flood", "1"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            recorded = lambda: [int(line) for line in open(pids_file).read().split()]
            if hangs:
                deadline = time.time() + 30
                while len(recorded()) < 3 and time.time() < deadline:
                    time.sleep(0.05)
                run.send_signal(signal.SIGTERM)
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
                failures.append(f"{case}: the script did not exit")
            pids = recorded()
            if len(pids) < started:
                failures.append(f"{case}: the stand-ins did not start ({pids})")
            for pid in pids:
                try:
                    os.kill(pid, 0)
                    with open(f"/proc/{pid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                except (ProcessLookupError, FileNotFoundError):
                    continue
                # A zombie is stopped: its parent died and this machine's init has not reaped it.
                if state == "Z":
                    continue
                failures.append(f"{case}: process {pid} left running (state {state})")
                os.kill(pid, signal.SIGKILL)
            print(f"{case}: {len(pids)} processes started, exit {run.returncode}", file=sys.stderr)
    if failures:
        sys.exit("cleanup check failed:\n" + "\n".join(failures))
    print("cleanup check: nothing left running")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-cleanup", action="store_true", help="check that no process is left when a set-up fails")
    default = os.path.join(ROOT, ".build", "release", "aasad")
    parser.add_argument("--aasad", default=default if os.path.exists(default) else os.path.join(ROOT, ".build", "debug", "aasad"))
    parser.add_argument("--flood", type=int, default=10_000, help="random SNI handshakes per server")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--wildcard", action="store_true", help="flood under aasad's wildcard site, with acme.ask (wildcard children)")
    parser.add_argument("--only", choices=["aasad", "caddy"], help="one server only")
    args = parser.parse_args()
    if args.check_cleanup:
        return check_cleanup()
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
