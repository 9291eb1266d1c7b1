#!/usr/bin/env python3
"""Model-based test of the watched config directory.

Random operations from a seeded generator change `sites/` the way operators and deploy tools do,
while clients fetch all the time; a model says what every host must answer. After each batch of
operations settles, every host answers as the model says over a new connection, over a kept
HTTP/1.1 connection and over a kept HTTP/2 connection (SNI = the host), and a new connection gets
the certificate the model expects. During the churn, every answer must be one the model allows in
that window: the version before or after an operation, or 404 where a site is (or was) absent;
never a half-written body, never another status.

Usage:
  config_model.py prepare CONFIG WORK
      makes the certificate pairs in WORK and installs the default one in CONFIG/tls (before the
      server starts, so that every host of the model has a certificate that covers it)
  config_model.py run CONFIG WORK HTTPS_PORT
      runs the operations; prints one line `ok ...` or `fail ...` with the figures, and exits 0 or 1

Environment: AASAD_MODEL_SEED (default 1), AASAD_MODEL_OPERATIONS (default 300, CI's run;
scripts/model-test.sh runs 10,000),
AASAD_MODEL_BATCH (operations applied before each settle, default 5), AASAD_MODEL_OLD_421=1
(count a 421 on a kept connection, whose certificate covers the host, instead of failing: the rule
once answered 421 when a site's certificate changed after the handshake).

Talks only to 127.0.0.1. Every wait is bounded.
"""
import hashlib, os, random, shutil, socket, ssl, subprocess, sys, threading, time
import h2.config, h2.connection, h2.events, h2.exceptions

DOMAIN = "model.test"
# Site directory names; a name may also be an alias symlink (a directory replaced by a symlink).
SITES = [f"s{i}.{DOMAIN}" for i in range(5)]
# Names that are only ever alias symlinks.
ALIASES = [f"a{i}.{DOMAIN}" for i in range(2)]
# Sites in a Kubernetes ConfigMap layout: sites/k0 -> ..data/k0, ..data -> ..vN.
KSITES = [f"k{i}.{DOMAIN}" for i in range(2)]
HOSTS = SITES + ALIASES + KSITES
PATH = "/.well-known/apple-app-site-association"
# The watcher applies a change at most 1 s plus its debounce after it; 5 s is a generous bound.
SETTLE_BOUND = 5.0
# Pause between polls while a step settles.
POLL_PAUSE = 0.02
# Longest pause between the steps of creating a site (directory, tls/ pair, file), as a script's
# commands would leave: longer than the watcher's debounce, so that a batch may be read between them.
STEP_PAUSE = 0.25
# Concurrent client threads fetching during the churn.
CLIENTS = 3
# Certificate pairs: 0 is the default (config/tls), 1..3 are put in sites' tls/.
PAIRS = 4
# Non-convergent steps reported before giving up (each costs SETTLE_BOUND).
MAX_FAILED_STEPS = 10
# Socket timeout for every client operation.
IO_TIMEOUT = 5
# CI's seeded run: 300 operations run every kind at least 9 times with seed 1 (the rarest weigh
# 2 in 45) in about a minute; 1,000 took 165 s of a 10-minute CI on two cores. scripts/model-test.sh
# runs the long one (docs/reliability.md).
DEFAULT_OPERATIONS = 300
# A run of at least this many operations fails if an operation kind never ran: a change of the
# weights or of an operation's preconditions must not silently drop a kind from CI's run.
EVERY_KIND_FROM = 100


def body(n, padding):
    """A valid AASA file, unique per n; the padding makes partial writes span several KB."""
    return ('{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], '
            '"components": [{"/": "/v%d/*", "comment": "%s"}]}]}}' % (n, "x" * padding)).encode()


INVALID = b'{"applinks": {"details": [],}}'


# MARK: - certificates

def pair_dir(work, p):
    return os.path.join(work, "pairs", "p%d" % p)


def prepare(config, work):
    """Makes PAIRS self-signed pairs covering *.model.test (one RSA, the others ECDSA)."""
    bundle = b""
    for p in range(PAIRS):
        d = pair_dir(work, p)
        os.makedirs(d, exist_ok=True)
        key = ["-newkey", "rsa:2048"] if p == 1 else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        subprocess.run(["openssl", "req", "-x509"] + key + [
            "-nodes", "-days", "2", "-subj", "/CN=model pair %d" % p,
            "-addext", "subjectAltName=DNS:*.%s" % DOMAIN,
            "-keyout", d + "/key.pem", "-out", d + "/cert.pem"], check=True, capture_output=True)
        bundle += open(d + "/cert.pem", "rb").read()
    open(os.path.join(work, "bundle.pem"), "wb").write(bundle)
    os.makedirs(os.path.join(config, "tls"), exist_ok=True)
    for f in ("cert.pem", "key.pem"):
        shutil.copy(os.path.join(pair_dir(work, 0), f), os.path.join(config, "tls", f))


def fingerprints(work):
    out = {}
    for p in range(PAIRS):
        pem = open(pair_dir(work, p) + "/cert.pem").read()
        out[hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()] = p
    return out


# MARK: - clients

class Answer:
    def __init__(self, status, data, complete, pair=None):
        self.status, self.body, self.complete, self.pair = status, data, complete, pair


class Clients:
    """TLS contexts and fingerprints shared by every client."""

    def __init__(self, work, port):
        self.port = port
        self.fps = fingerprints(work)
        self.h1 = self._context(work, ["http/1.1"])
        self.h2 = self._context(work, ["h2"])

    @staticmethod
    def _context(work, alpn):
        ctx = ssl.create_default_context(cafile=os.path.join(work, "bundle.pem"))
        ctx.set_alpn_protocols(alpn)
        return ctx

    def connect(self, host, ctx):
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=IO_TIMEOUT)
        try:
            return ctx.wrap_socket(raw, server_hostname=host)
        except Exception:
            raw.close()
            raise

    def pair_of(self, sock):
        der = sock.getpeercert(binary_form=True)
        return self.fps.get(hashlib.sha256(der).hexdigest(), -1)


class H1:
    """One HTTP/1.1 connection, kept alive; reads responses by Content-Length."""

    def __init__(self, clients, host):
        self.sock = clients.connect(host, clients.h1)
        self.file = self.sock.makefile("rb")
        self.pair = clients.pair_of(self.sock)

    def get(self, host):
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (PATH, host)).encode())
        line = self.file.readline(1024)
        if not line:
            raise ConnectionError("closed before the status line")
        status = int(line.split()[1])
        length = 0
        while True:
            h = self.file.readline(8192)
            if h in (b"\r\n", b""):
                break
            name, _, value = h.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        data = self.file.read(length) if length else b""
        return Answer(status, data, len(data) == length, self.pair)

    def close(self):
        try:
            self.file.close()
            self.sock.close()
        except Exception:
            pass


class H2:
    """One HTTP/2 connection, kept alive."""

    def __init__(self, clients, host):
        self.sock = clients.connect(host, clients.h2)
        if self.sock.selected_alpn_protocol() != "h2":
            raise ConnectionError("ALPN chose %r" % self.sock.selected_alpn_protocol())
        self.pair = clients.pair_of(self.sock)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())

    def get(self, host):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "https"), (":authority", host), (":path", PATH)],
                               end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        status, data, length = 0, b"", None
        deadline = time.time() + IO_TIMEOUT
        while time.time() < deadline:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            for ev in self.conn.receive_data(chunk):
                if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid:
                    hd = dict(ev.headers)
                    status = int(hd[":status"])
                    length = int(hd["content-length"]) if "content-length" in hd else None
                elif isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid:
                    data += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    self.sock.sendall(self.conn.data_to_send())
                    return Answer(status, data, length is None or len(data) == length, self.pair)
                elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                    raise ConnectionError("stream reset")
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    raise ConnectionError("GOAWAY")
            self.sock.sendall(self.conn.data_to_send())
        raise ConnectionError("no answer within %d s" % IO_TIMEOUT)

    def close(self):
        try:
            self.sock.close()
        except Exception:
            pass


class Kept:
    """Kept connections per (host, protocol), reconnecting when one breaks; `reconnects` counts it."""

    def __init__(self, clients):
        self.clients, self.conns, self.reconnects = clients, {}, 0

    def get(self, host, proto):
        key = (host, proto)
        for attempt in range(2):
            c = self.conns.get(key)
            if c is None:
                c = (H1 if proto == "h1" else H2)(self.clients, host)
                self.conns[key] = c
            try:
                return c.get(host)
            except (OSError, ConnectionError, h2.exceptions.ProtocolError, ValueError, IndexError):
                c.close()
                del self.conns[key]
                if attempt == 1:
                    raise
                self.reconnects += 1

    def drop(self, host, proto):
        c = self.conns.pop((host, proto), None)
        if c:
            c.close()


def fetch_new(clients, host):
    c = H1(clients, host)
    try:
        return c.get(host)
    finally:
        c.close()


# MARK: - the model

class Site:
    def __init__(self, disk=None, served=None, pair=None):
        self.disk = disk      # None, ("valid", bytes) or ("invalid", bytes)
        self.served = served  # the last good AASA, or None
        self.pair = pair      # the tls/ pair on disk (always a whole, valid pair), or None

    def copy(self):
        return Site(self.disk, self.served, self.pair)


class Model:
    def __init__(self):
        self.dirs = {}     # site directory name -> Site
        self.links = {}    # alias symlink name -> target name
        self.k = {n: None for n in KSITES}

    def expected(self, host):
        """(body or None, certificate pair or None) the host must answer with."""
        if host in self.k:
            return self.k[host], (0 if self.k[host] is not None else None)
        name = self.links.get(host, host)
        if host in self.links and name not in self.dirs:
            return None, None
        site = self.dirs.get(name)
        if site is None or site.served is None:
            return None, None
        return site.served, (site.pair if site.pair is not None else 0)


# MARK: - the run

class Run:
    def __init__(self, config, work, port, seed, operations, batch, old421):
        self.config, self.work, self.seed, self.operations, self.batch, self.old421 = (
            config, work, seed, operations, batch, old421)
        self.sites = os.path.join(config, "sites")
        self.rng = random.Random(seed)
        self.model = Model()
        self.clients = Clients(work, port)
        self.kept = Kept(self.clients)
        self.version = 0
        self.kversion = 0
        self.log = []
        self.lock = threading.Lock()
        self.windows = []           # per window: host -> set of allowed bodies (None = 404)
        self.wrong = []             # wrong answers seen by the churn clients
        self.answers = 0
        self.old_rule_421 = {"churn": 0, "settle": 0}
        self.client_errors = 0
        self.stopping = False
        self.failed_steps = []
        self.converge = []
        self.kinds = {}             # operation kind -> how many ran
        self.rounds = 0
        self.settle_seconds = 0.0
        self.scratch = os.path.join(work, "scratch")
        os.makedirs(self.scratch, exist_ok=True)

    # windows

    def open_window(self):
        with self.lock:
            self.windows.append({h: {self.model.expected(h)[0]} for h in HOSTS})

    def allow_current(self):
        with self.lock:
            w = self.windows[-1]
            for h in HOSTS:
                w[h].add(self.model.expected(h)[0])

    def window_id(self):
        with self.lock:
            return len(self.windows) - 1

    def allowed(self, host, first, last):
        with self.lock:
            out = set()
            for w in self.windows[first:last + 1]:
                out |= w[host]
            return out

    # filesystem helpers

    def path(self, name, *rest):
        return os.path.join(self.sites, name, *rest)

    def pause(self, most):
        time.sleep(self.rng.uniform(0, most))

    def next_body(self):
        self.version += 1
        return body(self.version, self.rng.choice([0, 200, 4000, 20000]))

    def write_atomic(self, target, data):
        tmp = os.path.join(os.path.dirname(target), ".tmp-%d" % self.rng.randrange(1 << 30))
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, target)

    def write_in_place(self, target, data, split):
        """Writes in two writes with a pause: never to be served half-written."""
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if split:
                cut = self.rng.randrange(1, len(data))
                os.write(fd, data[:cut])
                time.sleep(self.rng.uniform(0.05, 0.3))
                os.write(fd, data[cut:])
            else:
                os.write(fd, data)
        finally:
            os.close(fd)

    def write_file(self, target, data):
        mode = self.rng.choice(["atomic", "in-place", "partial"])
        if mode == "atomic":
            self.write_atomic(target, data)
        else:
            self.write_in_place(target, data, mode == "partial")
        return mode

    def install_pair(self, name, p):
        """Key then certificate renamed into tls/, as a deploy tool does (a moment mismatched)."""
        tls = self.path(name, "tls")
        os.makedirs(tls, exist_ok=True)
        for f in ("key.pem", "cert.pem"):
            tmp = os.path.join(tls, ".tmp-" + f)
            shutil.copy(os.path.join(pair_dir(self.work, p), f), tmp)
            os.rename(tmp, os.path.join(tls, f))

    def remove_entry(self, name):
        p = self.path(name)
        if os.path.islink(p):
            os.remove(p)
        elif os.path.isdir(p):
            shutil.rmtree(p)

    # operations: each updates the model and widens the window first, then changes the disk

    def targets_of(self, name):
        return [a for a, t in self.model.links.items() if t == name]

    def op_create(self):
        # A name that is an alias itself cannot have aliases (no alias of an alias); an absent name
        # may have dangling aliases, which come alive with it.
        free = [n for n in SITES if n not in self.model.dirs and (n not in self.model.links or not self.targets_of(n))]
        if not free:
            return None
        name = self.rng.choice(free)
        data = self.next_body()
        pair = self.rng.choice([None, 1, 2, 3])
        if self.model.links.pop(name, None):
            self.allow_current()  # between the symlink's removal and the file: 404
        self.model.dirs[name] = Site(("valid", data), data, pair)
        self.allow_current()
        self.remove_entry(name)  # a symlink replaced by a directory
        return self.make_site(name, data, pair)

    def make_site(self, name, data, pair):
        """Makes NAME's directory, then its pair (if any), then its AASA file, with pauses between."""
        os.mkdir(self.path(name))
        self.pause(STEP_PAUSE)
        if pair:
            self.install_pair(name, pair)
            self.pause(STEP_PAUSE)
        mode = self.write_file(self.path(name, "apple-app-site-association"), data)
        return "create %s pair=%s v%d %s" % (name, pair, self.version, mode)

    def delete_site(self):
        """Deletes a site's directory chosen at random; its name, or None when there is none."""
        if not self.model.dirs:
            return None
        name = self.rng.choice(sorted(self.model.dirs))
        del self.model.dirs[name]
        self.allow_current()
        shutil.rmtree(self.path(name))
        return name

    def op_delete(self):
        name = self.delete_site()
        return None if name is None else "delete %s" % name

    def op_recreate(self):
        name = self.delete_site()
        if name is None:
            return None
        self.pause(0.05)
        return "recreate: delete %s; " % name + self.op_create_named(name)

    def op_create_named(self, name):
        data = self.next_body()
        pair = self.rng.choice([None, 1, 2, 3])
        self.model.dirs[name] = Site(("valid", data), data, pair)
        self.allow_current()
        return self.make_site(name, data, pair)

    def op_write(self):
        if not self.model.dirs:
            return None
        name = self.rng.choice(sorted(self.model.dirs))
        data = self.next_body()
        site = self.model.dirs[name]
        site.disk, site.served = ("valid", data), data
        self.allow_current()
        mode = self.write_file(self.path(name, "apple-app-site-association"), data)
        return "write %s v%d %s" % (name, self.version, mode)

    def op_invalid(self):
        if not self.model.dirs:
            return None
        name = self.rng.choice(sorted(self.model.dirs))
        site = self.model.dirs[name]
        data = self.rng.choice([INVALID, body(0, 10)[:40]])
        site.disk = ("invalid", data)  # the last good version stays
        self.allow_current()
        mode = self.write_file(self.path(name, "apple-app-site-association"), data)
        return "invalid %s %s" % (name, mode)

    def op_delete_file(self):
        have = [n for n, s in self.model.dirs.items() if s.disk is not None]
        if not have:
            return None
        name = self.rng.choice(sorted(have))
        site = self.model.dirs[name]
        site.disk, site.served = None, None
        self.allow_current()
        os.remove(self.path(name, "apple-app-site-association"))
        return "delete-file %s" % name

    def op_tls_set(self):
        if not self.model.dirs:
            return None
        name = self.rng.choice(sorted(self.model.dirs))
        site = self.model.dirs[name]
        p = self.rng.choice([q for q in (1, 2, 3) if q != site.pair])
        site.pair = p
        self.allow_current()
        self.install_pair(name, p)
        return "tls %s pair=%d" % (name, p)

    def op_tls_remove(self):
        have = [n for n, s in self.model.dirs.items() if s.pair is not None]
        if not have:
            return None
        name = self.rng.choice(sorted(have))
        self.model.dirs[name].pair = None
        self.allow_current()
        shutil.rmtree(self.path(name, "tls"))
        return "tls-remove %s" % name

    def op_alias_add(self):
        """An alias symlink to a site name (present or not yet); sometimes replacing a directory."""
        targets = [n for n in SITES if n not in self.model.links]
        names = [n for n in ALIASES + SITES if n not in self.model.links and not self.targets_of(n)]
        if not targets or not names:
            return None
        name = self.rng.choice(names)
        target = self.rng.choice([t for t in targets if t != name] or [None])
        if target is None:
            return None
        was_dir = name in self.model.dirs
        if self.model.dirs.pop(name, None):
            self.allow_current()  # between the directory's removal and the symlink: 404
        self.model.links[name] = target
        self.allow_current()
        if was_dir:
            shutil.rmtree(self.path(name))
        os.symlink(target, self.path(name))
        return "alias %s -> %s%s" % (name, target, " (replacing its directory)" if was_dir else "")

    def op_alias_remove(self):
        if not self.model.links:
            return None
        name = self.rng.choice(sorted(self.model.links))
        del self.model.links[name]
        self.allow_current()
        os.remove(self.path(name))
        return "alias-remove %s" % name

    def op_rename(self):
        have = sorted(self.model.dirs)
        free = [n for n in SITES if n not in self.model.dirs and n not in self.model.links]
        if not have or not free:
            return None
        src, dst = self.rng.choice(have), self.rng.choice(free)
        site = self.model.dirs.pop(src)
        data = site.disk[1] if site.disk and site.disk[0] == "valid" else None
        self.model.dirs[dst] = Site(site.disk, data, site.pair)
        self.allow_current()
        os.rename(self.path(src), self.path(dst))
        return "rename %s -> %s" % (src, dst)

    def op_kswap(self):
        """A ConfigMap update: a new ..vN, ..data swapped to it by rename, the old one removed."""
        self.kversion += 1
        new = "..v%d" % self.kversion
        contents = {}
        for k in KSITES:
            r = self.rng.random()
            contents[k] = None if r < 0.2 else (self.model.k[k] if r < 0.4 else self.next_body())
        self.model.k = contents
        self.allow_current()
        for k, data in contents.items():
            if data is not None:
                os.makedirs(os.path.join(self.sites, new, k))
                with open(os.path.join(self.sites, new, k, "apple-app-site-association"), "wb") as f:
                    f.write(data)
            else:
                os.makedirs(os.path.join(self.sites, new), exist_ok=True)
        old = os.readlink(os.path.join(self.sites, "..data")) if os.path.islink(os.path.join(self.sites, "..data")) else None
        tmp = os.path.join(self.sites, "..data_tmp")
        os.symlink(new, tmp)
        os.rename(tmp, os.path.join(self.sites, "..data"))
        for k in KSITES:
            if not os.path.islink(os.path.join(self.sites, k)):
                os.symlink("..data/" + k, os.path.join(self.sites, k))
        if old:
            shutil.rmtree(os.path.join(self.sites, old))
        return "configmap swap to %s: %s" % (new, " ".join(
            "%s=%s" % (k, "absent" if v is None else "v%s" % v[v.find(b"/v") + 2:].split(b"/")[0].decode())
            for k, v in contents.items()))

    OPERATIONS = [
        ("create", 6), ("delete", 3), ("recreate", 6), ("write", 8), ("invalid", 3), ("delete_file", 2),
        ("tls_set", 4), ("tls_remove", 2), ("alias_add", 3), ("alias_remove", 2), ("rename", 2), ("kswap", 2),
    ]

    # checking

    def check(self, host, answer, allowed):
        """None when the answer is allowed, else why not."""
        if answer.status == 421 and self.old421:
            return None
        if not answer.complete:
            return "truncated body (%d bytes)" % len(answer.body)
        if answer.status == 200:
            return None if answer.body in allowed else "unexpected body %r" % answer.body[:70]
        if answer.status == 404:
            return None if None in allowed else "404 while the model serves it"
        return "status %d" % answer.status

    def churn(self, rng):
        """A client fetching random hosts all the time over new and kept connections."""
        kept = Kept(self.clients)
        while not self.stopping:
            host = rng.choice(HOSTS)
            proto = rng.choice(["new", "h1", "h2"])
            first = self.window_id()
            try:
                answer = fetch_new(self.clients, host) if proto == "new" else kept.get(host, proto)
            except Exception as e:
                with self.lock:
                    self.client_errors += 1
                    self.wrong.append("%s over %s: %s: %s (window %d)" % (host, proto, type(e).__name__, e, first))
                continue
            last = self.window_id()
            why = self.check(host, answer, self.allowed(host, first, last))
            with self.lock:
                self.answers += 1
                if answer.status == 421:
                    self.old_rule_421["churn"] += 1
                    kept.drop(host, proto)
                if why:
                    self.wrong.append("%s over %s: %s (windows %d-%d)" % (host, proto, why, first, last))

    def settled(self, full):
        """Whether every host answers as the model says: None, or why not. `full` asks over every
        kind of connection and checks certificates; else only over the kept HTTP/1.1 ones (a
        cheap poll while the change is still on its way)."""
        for host in HOSTS:
            want, pair = self.model.expected(host)
            try:
                answers = [("new", fetch_new(self.clients, host))] if full else []
                for proto in ("h1", "h2") if full else ("h1",):
                    answers.append((proto, self.kept.get(host, proto)))
            except Exception as e:
                return "%s: %s: %s" % (host, type(e).__name__, e)
            for proto, a in answers:
                if a.status == 421:
                    with self.lock:
                        self.old_rule_421["settle"] += 1
                    if self.old421:
                        self.kept.drop(host, proto)
                        return "%s over %s: 421 (old rule)" % (host, proto)
                got = a.body if a.status == 200 and a.complete else (None if a.status == 404 else ("status", a.status))
                if got != want:
                    return "%s over %s: %s, the model says %s" % (
                        host, proto, describe(got), describe(want))
            if full and want is not None and answers[0][1].pair != pair:
                return "%s: certificate pair %s, the model says %s" % (host, answers[0][1].pair, pair)
        return None

    def settle(self, step):
        start = time.time()
        why = None
        while time.time() - start < SETTLE_BOUND:
            self.rounds += 1
            why = self.settled(False)
            if why is None:
                why = self.settled(True)
            if why is None:
                self.converge.append(time.time() - start)
                self.log.append("  settled in %.3f s" % (time.time() - start))
                self.settle_seconds += time.time() - start
                return True
            time.sleep(POLL_PAUSE)
        self.failed_steps.append((step, why))
        print("step %d did not converge within %.0f s (seed %d): %s" % (step, SETTLE_BOUND, self.seed, why), flush=True)
        print("  operations so far (last 30 of %d):" % len(self.log), flush=True)
        for line in self.log[-30:]:
            print("    " + line, flush=True)
        return False

    def run(self):
        os.makedirs(self.sites, exist_ok=True)
        self.open_window()
        self.op_kswap()  # the ConfigMap layout exists from the start
        self.log.append("setup: configmap layout")
        self.settle(0)
        threads = [threading.Thread(target=self.churn, args=(random.Random(self.seed * 1000 + i),), daemon=True)
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        started = time.time()
        names = [n for n, _ in self.OPERATIONS]
        weights = [w for _, w in self.OPERATIONS]
        done, step, in_batch = 0, 0, 0
        while done < self.operations and len(self.failed_steps) < MAX_FAILED_STEPS:
            kind = self.rng.choices(names, weights)[0]
            # An invalid file keeps the version the server last saw valid: settle first, so that
            # the model and the server agree on which that is. A rename may carry an invalid file
            # onto a name deleted in the same batch; the watcher, coalescing the two, never sees
            # that name gone and rightly keeps its last good version, so a rename settles first too.
            if in_batch and (kind in ("invalid", "rename") or in_batch >= self.batch):
                step += 1
                self.settle(step)
                self.open_window()
                in_batch = 0
            what = getattr(self, "op_" + kind)()
            if what is None:
                continue
            done += 1
            in_batch += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            self.log.append("%d.%d %s" % (step, done, what))
        step += 1
        self.settle(step)
        elapsed = time.time() - started
        self.stopping = True
        for t in threads:
            t.join(IO_TIMEOUT * 3)
        conv = sorted(self.converge) or [0]
        figures = ("operations=%d steps=%d seconds=%.1f answers=%d wrong=%d failed_steps=%d old_rule_421=%d/%d "
                   "converge_median=%.3f converge_p99=%.3f converge_max=%.3f settle_seconds=%.1f rounds=%d reconnects=%d seed=%d" % (
                       done, step, elapsed, self.answers, len(self.wrong), len(self.failed_steps),
                       self.old_rule_421["churn"], self.old_rule_421["settle"], conv[len(conv) // 2],
                       conv[min(len(conv) - 1, int(len(conv) * 0.99))], conv[-1], self.settle_seconds, self.rounds,
                       self.kept.reconnects, self.seed))
        with open(os.path.join(self.work, "operations.log"), "w") as f:
            f.write("seed %d\n" % self.seed + "\n".join(self.log) + "\n" + "\n".join("wrong: " + w for w in self.wrong) + "\n")
        for line in self.wrong[:20]:
            print("wrong: " + line)
        print("operations by kind: " + " ".join("%s=%d" % (n, self.kinds.get(n, 0)) for n, _ in self.OPERATIONS))
        never = [n for n, _ in self.OPERATIONS if not self.kinds.get(n)]
        if never and done >= EVERY_KIND_FROM:
            print("never ran: " + " ".join(never))
        if self.wrong or self.failed_steps or (never and done >= EVERY_KIND_FROM):
            print("fail " + figures)
            return 1
        print("ok " + figures)
        return 0


def describe(v):
    if v is None:
        return "404"
    if isinstance(v, bytes):
        i = v.find(b"/v")
        return "v" + v[i + 2:].split(b"/")[0].decode() if i >= 0 else repr(v[:40])
    return repr(v)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) >= 5 and sys.argv[1] == "run":
        env = os.environ
        return Run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(env.get("AASAD_MODEL_SEED", "1")),
                   int(env.get("AASAD_MODEL_OPERATIONS", str(DEFAULT_OPERATIONS))), int(env.get("AASAD_MODEL_BATCH", "5")),
                   env.get("AASAD_MODEL_OLD_421") == "1").run()
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
