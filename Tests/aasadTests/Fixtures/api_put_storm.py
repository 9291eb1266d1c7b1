"""PUTs to the tenant API from many connections at once, for the crash test (ApiCrashTests.swift),
and the check of the site directories left behind.

  api_put_storm.py storm PORT TOKEN HOSTS COUNT THREADS
      Sends COUNT PUTs, PUT k to host k % len(HOSTS) (HOSTS comma-separated), from THREADS
      threads, each with its own kept-alive connection, spread over the source addresses
      127.0.0.1 to 127.0.0.4 (the listener bounds connections per peer address). Commands on
      standard input, one per line (as Launcher.swift speaks them):
        answers N  ->  "answered" once N PUTs have had an answer (any status)
        report     ->  one JSON line: {"answers": {status: count}, "errors": n, "sent": n,
                       "done": {host: [k answered 200, 201 or 202, ...]}}
  api_put_storm.py check SITES HOSTS OLD DONE
      Checks every host's directory under SITES: exactly the OLD files (a JSON object host ->
      {file: text}, hosts absent from it had no site), or exactly the files of one PUT k to that
      host, never a mix; a host in DONE (a PUT answered 200, 201 or 202: written) must hold some PUT's files.
      Prints one JSON line: {"problems": [...], "old": n, "written": n, "absent": n}.
  api_put_storm.py cut PORT TOKEN HOST
      Sends a PUT's head and half its body, prints "port N" (its local port) and waits: the test
      kills it with SIGKILL mid-body.
"""
import http.client
import json
import os
import socket
import sys
import threading

FILES = ("apple-app-site-association", "assetlinks.json", "site.yaml", "index.html")


def body(k):
    """PUT k's body: every file carries k, so a site made of two PUTs' files shows. Odd k has no
    assetlinks.json, so a mix of file sets shows too."""
    aasa = {"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.p%d" % k], "components": [{"/": "/k%d/*" % k}]}]}}
    links = None
    if k % 2 == 0:
        links = [{"relation": ["delegate_permission/common.handle_all_urls"],
                  "target": {"namespace": "android_app", "package_name": "com.example.p%d" % k,
                             "sha256_cert_fingerprints": [":".join(["%02X" % ((k + i) % 256) for i in range(32)])]}}]
    return {"aasa": aasa, "assetlinks": links, "settings": {"cache-control": "max-age=%d" % (k + 1)},
            "page": "<!doctype html><title>put %d</title>" % k}


class Connection(http.client.HTTPConnection):
    """A connection from a chosen loopback source address."""

    def __init__(self, port, source):
        super().__init__("127.0.0.1", port, timeout=30, source_address=(source, 0))


def storm(port, token, hosts, count, threads):
    lock = threading.Condition()
    state = {"answers": {}, "errors": 0, "sent": 0, "answered": 0, "done": {}}
    next_k = [0]

    def worker(index):
        conn = None
        source = "127.0.0.%d" % (1 + index % 4)
        while True:
            with lock:
                k = next_k[0]
                if k >= count:
                    return
                next_k[0] += 1
            host = hosts[k % len(hosts)]
            payload = json.dumps(body(k)).encode()
            try:
                if conn is None:
                    conn = Connection(port, source)
                with lock:
                    state["sent"] += 1
                conn.request("PUT", "/v1/sites/" + host, body=payload,
                             headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
                answer = conn.getresponse()
                answer.read()
                with lock:
                    key = str(answer.status)
                    state["answers"][key] = state["answers"].get(key, 0) + 1
                    state["answered"] += 1
                    if answer.status in (200, 201, 202):
                        state["done"].setdefault(host, []).append(k)
                    lock.notify_all()
                if answer.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except Exception:
                with lock:
                    state["errors"] += 1
                    lock.notify_all()
                if conn is not None:
                    conn.close()
                conn = None

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "answers":
            wanted = int(words[1])
            with lock:
                # Bounded: the test fails on a missing line rather than hanging.
                lock.wait_for(lambda: state["answered"] >= wanted or next_k[0] >= count and state["answered"] + state["errors"] >= count, timeout=60)
                reached = state["answered"] >= wanted
            print("answered" if reached else "not answered", flush=True)
        elif words[0] == "report":
            with lock:
                print(json.dumps({"answers": state["answers"], "errors": state["errors"], "sent": state["sent"],
                                  "done": state["done"]}), flush=True)


def read_site(directory):
    """The API's four files of a site directory (text or None), and any other entry's name."""
    files, others = {}, []
    for name in sorted(os.listdir(directory)):
        if name in FILES:
            with open(os.path.join(directory, name), "rb") as f:
                files[name] = f.read().decode("utf-8", "replace")
        else:
            others.append(name)
    return files, others


def matches(files, k):
    """Whether `files` are exactly what PUT k writes: the same set of files, each with k's
    content (the JSON files compared as JSON: the API writes them in its own form)."""
    b = body(k)
    want = {"apple-app-site-association", "site.yaml", "index.html"} | ({"assetlinks.json"} if b["assetlinks"] is not None else set())
    if set(files) != want:
        return False
    try:
        if json.loads(files["apple-app-site-association"]) != b["aasa"]:
            return False
        if b["assetlinks"] is not None and json.loads(files["assetlinks.json"]) != b["assetlinks"]:
            return False
    except ValueError:
        return False
    lines = sorted(files["site.yaml"].strip().split("\n"))
    if lines != sorted(['"cache-control": "max-age=%d"' % (k + 1), "page: index.html"]):
        return False
    return files["index.html"] == b["page"]


def check(sites, hosts, old, done):
    problems, counts = [], {"old": 0, "written": 0, "absent": 0}
    for i, host in enumerate(hosts):
        directory = os.path.join(sites, host)
        if not os.path.lexists(directory):
            if host in old:
                problems.append("%s: the old site is gone" % host)
            elif host in done:
                problems.append("%s: absent although a PUT was answered %s" % (host, done[host]))
            else:
                counts["absent"] += 1
            continue
        files, others = read_site(directory)
        if others:
            problems.append("%s: other entries %s" % (host, others))
        if host in old and files == old[host]:
            if host in done:
                problems.append("%s: the old site although a PUT was answered %s" % (host, done[host]))
            counts["old"] += 1
            continue
        # Which PUT the AASA file names; then every file must be that PUT's.
        ks = [k for k in range(i, 100000, len(hosts)) if "com.example.p%d\"" % k in files.get("apple-app-site-association", "")]
        if len(ks) == 1 and matches(files, ks[0]):
            counts["written"] += 1
        else:
            problems.append("%s: neither the old files nor one PUT's: %s" % (host, json.dumps(files)[:400]))
    print(json.dumps(dict(problems=problems, **counts)), flush=True)


def cut(port, token, host):
    payload = json.dumps(body(0)).encode()
    s = socket.create_connection(("127.0.0.1", port))
    head = ("PUT /v1/sites/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (host, token, len(payload)))
    s.sendall(head.encode() + payload[: len(payload) // 2])
    print("port %d" % s.getsockname()[1], flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "storm":
        storm(int(sys.argv[2]), sys.argv[3], sys.argv[4].split(","), int(sys.argv[5]), int(sys.argv[6]))
    elif mode == "check":
        with open(sys.argv[4]) as f:
            old = json.load(f)
        with open(sys.argv[5]) as f:
            done = json.load(f)
        check(sys.argv[2], sys.argv[3].split(","), old, done)
    elif mode == "cut":
        cut(int(sys.argv[2]), sys.argv[3], sys.argv[4])
