#!/usr/bin/env python3
"""Start-up time, memory and reload latency of aasad serve at N sites (issue 4).

Generates N sites of about 2 KB each (half of them identical, half unique), starts the release
build, measures the time from exec to the readiness line and the RSS, then edits random sites one
at a time and measures the time from the file's close to the new version being served (polled over
one keep-alive connection), then measures HTTP/1.1 keep-alive over TLS at that size (h2load --h1 -c50,
3 runs of 100,000 requests to one site, pinned to core 1: req/s and the server's CPU microseconds
per request, medians). Prints key=value lines. Everything stays on 127.0.0.1.

With --certs, every other site carries a certificate of its own (tls/cert.pem and tls/key.pem,
ECDSA P-256, all signed with one key so that 50,000 of them take seconds) and the rest are served
under a default wildcard certificate for *.bench.test (config/tls/); needs Python's cryptography.
AASAD=PATH runs that binary instead of the release build's. --tree=DIR generates the sites in DIR
(config/ and state/) and keeps them, or reuses what an earlier run left there (a million sites
take minutes to generate); --no-keepalive skips the keep-alive runs. EDITS may be 0.

Usage: scripts/bench-reload.py SITES [EDITS] [--certs] [--tree=DIR] [--no-keepalive]   (build first: swift build -c release --product aasad)
"""
import datetime, http.client, json, os, random, re, shutil, subprocess, sys, tempfile, time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
certs = "--certs" in sys.argv[1:]
keepalive = "--no-keepalive" not in sys.argv[1:]
tree = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--tree=")), None)
sites = int(args[0]) if len(args) > 0 else 10
edits = int(args[1]) if len(args) > 1 else 50
binary = os.environ.get("AASAD") or subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip() + "/aasad"
work = tree or tempfile.mkdtemp(prefix="aasad-reload-")

def certificate_writer():
    """Writes a (chain, key) pair for a name: one key for every certificate, self-signed leaves."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    now = datetime.datetime.now(datetime.timezone.utc)
    def write(directory, name):
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=30))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
                .sign(key, hashes.SHA256()))
        os.makedirs(directory, exist_ok=True)
        with open(f"{directory}/cert.pem", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(f"{directory}/key.pem", "wb") as f:
            f.write(key_pem)
    return write

def aasa(tag):
    components = [{"/": f"/section-{i}/*", "comment": f"pattern {i} of {tag}"} for i in range(28)]
    return json.dumps({"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": components}]}}, indent=1)

def start(label):
    """Starts the server on the generated config, waits for readiness, prints the start-up figures."""
    begin = time.time()
    server = subprocess.Popen([binary, "serve", "--config", f"{work}/config", "--https", "127.0.0.1:0", "--http", "127.0.0.1:0",
                               "--threads", "2", "--state", f"{work}/state", "--log-level", "warning", "--admin", "off"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    while line and not line.startswith("aasad ready"):
        line = server.stdout.readline()
    ready = time.time() - begin
    port = int(re.search(r"http=[^ ]*:(\d+)", line).group(1))
    server.https_port = int(re.search(r"https=[^ ]*:(\d+)", line).group(1))
    rss = next(int(l.split()[1]) for l in open(f"/proc/{server.pid}/status") if l.startswith("VmRSS"))
    # CPU seconds the server spent getting ready (user + system): steadier than wall time on a busy machine.
    stat = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
    user, system = int(stat[11]) / os.sysconf("SC_CLK_TCK"), int(stat[12]) / os.sysconf("SC_CLK_TCK")
    print(f"bench=reload sites={sites} certs={'half' if certs else 'none'} start={label} startup_s={ready:.2f} startup_cpu_s={user + system:.2f} user_s={user:.2f} sys_s={system:.2f} rss_kb={rss} rss_per_site_bytes={rss * 1024 // max(sites, 1)}", flush=True)
    # Work a start leaves for after readiness (certificate pairs checked late, Daemon+LateChecks.swift):
    # wait until none of the server's threads has been runnable for a second (a thread's state,
    # not its CPU time, which a loaded machine hands out in slivers), then print the time, CPU and RSS.
    def cpu():
        stat = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    def runnable():
        states = []
        for task in os.listdir(f"/proc/{server.pid}/task"):
            try:
                states.append(open(f"/proc/{server.pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        return "R" in states
    still = 0
    while still < 4 and time.time() - begin < 1800:
        time.sleep(0.25)
        still = 0 if runnable() else still + 1
    last = cpu()
    rss = next(int(l.split()[1]) for l in open(f"/proc/{server.pid}/status") if l.startswith("VmRSS"))
    print(f"bench=reload sites={sites} start={label} settled_s={time.time() - begin - 1:.2f} settled_cpu_s={last:.2f} settled_rss_kb={rss}", flush=True)
    return server, port

try:
    shared = aasa("shared")
    # The unique files differ only in their tag: one encoding, the tag put in per site (json.dumps
    # with indent runs Python's own encoder, which made a million sites' tree take hours).
    template = aasa("@TAG@")
    t = time.time()
    reused = tree is not None and os.path.isdir(f"{work}/config/sites")
    for i in range(0 if reused else sites):
        d = f"{work}/config/sites/s{i}.bench.test"
        os.makedirs(d)
        with open(f"{d}/apple-app-site-association", "w") as f:
            f.write(shared if i % 2 == 0 else template.replace("@TAG@", f"site {i}"))
    if certs and not reused:
        write = certificate_writer()
        write(f"{work}/config/tls", "*.bench.test")
        for i in range(1, sites, 2):
            write(f"{work}/config/sites/s{i}.bench.test/tls", f"s{i}.bench.test")
    print(f"bench=reload sites={sites} certs={'half' if certs else 'none'} generate_s={time.time() - t:.1f} reused={reused} file_bytes={len(shared)}", flush=True)

    # A first start has no state: a reused tree's verdicts are removed.
    shutil.rmtree(f"{work}/state", ignore_errors=True)
    # First start: every file validated. The restart after the edits finds the verdicts of the
    # unchanged contents in the state directory (STATE/cache/validated-contents).
    server, port = start("first")

    conn = http.client.HTTPConnection("127.0.0.1", port)
    def fetch(host):
        conn.request("GET", "/.well-known/apple-app-site-association", headers={"Host": host})
        r = conn.getresponse()
        return r.status, r.read()

    latencies = []
    for k in range(edits):
        i = random.randrange(sites)
        host = f"s{i}.bench.test"
        body = aasa(f"edit {k}").encode()
        with open(f"{work}/config/sites/{host}/apple-app-site-association", "wb") as f:
            f.write(body)
        t0 = time.time()
        while True:
            status, got = fetch(host)
            if got == body:
                break
            if time.time() - t0 > 10:
                raise SystemExit(f"edit {k} of {host} not served after 10 s")
            time.sleep(0.002)
        latencies.append(time.time() - t0)
    latencies.sort()
    latencies = latencies or [0.0]
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    print(f"bench=reload sites={sites} edits={edits} p50_ms={p(0.5) * 1000:.0f} p99_ms={p(0.99) * 1000:.0f} max_ms={latencies[-1] * 1000:.0f}", flush=True)

    # Keep-alive at this size: the host is looked up among all the sites' names on every request.
    if keepalive and shutil.which("h2load"):
        def server_cpu():
            stat = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        host = f"s{sites // 2 + 1}.bench.test" if sites > 1 else "s0.bench.test"
        rates, costs = [], []
        for _ in range(3):
            before = server_cpu()
            out = subprocess.run(["taskset", "-c", "1", "h2load", "--h1", "-c50", "-n100000",
                                  "--connect-to", f"127.0.0.1:{server.https_port}",
                                  f"https://{host}:{server.https_port}/.well-known/apple-app-site-association"],
                                 capture_output=True, text=True, timeout=300).stdout
            done = int(re.search(r"(\d+) succeeded", out).group(1))
            rate = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", out).group(1))
            if done != 100000:
                raise SystemExit(f"keep-alive run: {done} of 100000 succeeded")
            rates.append(rate)
            costs.append((server_cpu() - before) * 1e6 / done)
        med = lambda v: sorted(v)[len(v) // 2]
        print(f"bench=reload sites={sites} keepalive_rps={med(rates):.0f} keepalive_us_per_req={med(costs):.1f} runs={len(rates)}", flush=True)
    server.terminate()
    server.wait(timeout=60)
    server, port = start("restart")
    server.terminate()
    server.wait(timeout=120)
finally:
    if tree is None:
        shutil.rmtree(work, ignore_errors=True)
