#!/usr/bin/env python3
"""Tenant API: the time from a PUT's first byte to its answer (docs/api.md: a 200/201 answer
means this process serves the new files), beside SITES sites in the config (benchmark, not a test).

Generates SITES sites (one small AASA file each), starts the release build with the API on
loopback, then:
  - sequential: PUTS PUTs one after another on one kept-alive connection, alternately replacing
    an existing site and creating a new one; after each answer a GET of the AASA path over HTTPS
    (a new TLS connection, SNI the host) must return the new bytes: "put" is the answer's time,
    "put+get" the time until that GET returned them;
  - concurrent: CONCURRENT clients (each its own connection, spread over 127.0.0.1-4 since the
    listener bounds connections per peer address), PUTS PUTs in all: half replace existing
    sites, half create new ones.
Prints p50/p99/max in milliseconds, the answers' statuses and how many GETs did not see the new
bytes (must be 0). Everything stays on 127.0.0.1. AASAD=PATH runs that binary.

Usage: scripts/bench-api-put.py SITES [PUTS] [CONCURRENT]
       (build first: nice -n 5 swift build -c release --product aasad)
"""
import hashlib, http.client, json, os, random, shutil, socket, ssl, subprocess, sys, tempfile, threading, time

args = sys.argv[1:]
sites = int(args[0]) if len(args) > 0 else 10
puts = int(args[1]) if len(args) > 1 else 200
concurrent = int(args[2]) if len(args) > 2 else 16
binary = os.environ.get("AASAD") or subprocess.run(
    ["swift", "build", "-c", "release", "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip() + "/aasad"
work = tempfile.mkdtemp(prefix="aasad-api-put-")
TOKEN = "bench-api-put-token"


def aasa(tag):
    return {"applinks": {"apps": [], "details": [{"appIDs": [f"ABCDE12345.com.example.{tag}"], "components": [{"/": "/buy/*"}]}]}}


def generate():
    begin = time.time()
    root = f"{work}/config/sites"
    os.makedirs(root)
    for i in range(sites):
        os.mkdir(f"{root}/site-{i}.bench.test")
        with open(f"{root}/site-{i}.bench.test/apple-app-site-association", "w") as f:
            json.dump(aasa(f"old{i}"), f)
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    with open(f"{work}/tokens.yaml", "w") as f:
        f.write(f'tokens:\n  - name: bench\n    sha256: {digest}\n    scope: write\n    hosts: ["*"]\n')
    print(f"generated={sites} seconds={time.time() - begin:.1f}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start():
    api = free_port()
    begin = time.time()
    server = subprocess.Popen(
        [binary, "serve", "--config", f"{work}/config", "--state", f"{work}/state", "--https", "127.0.0.1:0", "--http", "127.0.0.1:0",
         "--threads", "2", "--admin", "off", "--log-level", "warning", "--api-listen", f"127.0.0.1:{api}",
         "--api-tokens-file", f"{work}/tokens.yaml", "--api-requests-per-minute", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    while True:
        line = server.stdout.readline()
        if not line:
            sys.exit("aasad exited before it was ready")
        if line.startswith("aasad ready:"):
            break
    https = int(line.split("https=")[1].split()[0].rsplit(":", 1)[1])
    # Keep reading stdout so that the server never blocks on a full pipe.
    threading.Thread(target=lambda: server.stdout.read(), daemon=True).start()
    print(f"ready_seconds={time.time() - begin:.2f} pid={server.pid} api={api} https={https}", flush=True)
    return server, api, https


def put(conn, host, tag):
    body = json.dumps({"aasa": aasa(tag)}).encode()
    conn.request("PUT", f"/v1/sites/{host}", body=body, headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    answer = conn.getresponse()
    answer.read()
    return answer.status


context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE


def served(https, host):
    raw = socket.create_connection(("127.0.0.1", https), timeout=10)
    with context.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = tls.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""


def quantiles(values):
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))] * 1000
    return f"p50={pick(0.5):.1f} p99={pick(0.99):.1f} max={values[-1] * 1000:.1f}"


def sequential(api, https):
    conn = http.client.HTTPConnection("127.0.0.1", api, timeout=30)
    put_times, get_times, statuses, stale = [], [], {}, 0
    rng = random.Random(1)
    for i in range(puts):
        host = f"site-{rng.randrange(sites)}.bench.test" if i % 2 == 0 else f"new-{i}.bench.test"
        tag = f"seq{i}"
        begin = time.perf_counter()
        status = put(conn, host, tag)
        answered = time.perf_counter()
        body = served(https, host)
        got = time.perf_counter()
        statuses[status] = statuses.get(status, 0) + 1
        if f"com.example.{tag}\"".encode() not in body:
            stale += 1
        put_times.append(answered - begin)
        get_times.append(got - begin)
    print(f"sequential puts={puts} put: {quantiles(put_times)} put+get: {quantiles(get_times)} statuses={statuses} stale_gets={stale}",
          flush=True)


def parallel(api):
    times, statuses, lock = [], {}, threading.Lock()
    counter = iter(range(puts))

    def client(index):
        conn = http.client.HTTPConnection("127.0.0.1", api, timeout=30, source_address=(f"127.0.0.{1 + index % 4}", 0))
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            host = f"site-{i * 7919 % sites}.bench.test" if i % 2 == 0 else f"par-{i}.bench.test"
            begin = time.perf_counter()
            status = put(conn, host, f"par{i}")
            took = time.perf_counter() - begin
            with lock:
                times.append(took)
                statuses[status] = statuses.get(status, 0) + 1

    begin = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - begin
    print(f"concurrent clients={concurrent} puts={puts} put: {quantiles(times)} statuses={statuses} puts_per_second={puts / wall:.0f}",
          flush=True)


generate()
server, api, https = start()
try:
    sequential(api, https)
    parallel(api)
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(work, ignore_errors=True)
