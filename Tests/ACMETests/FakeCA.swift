import ACME
import Foundation
import Synchronization
import TestSupport
import Testing

/// A misbehaving ACME server on loopback (Python's http.server over TLS, as HTTPSClientTests'),
/// for what pebble never does: authorizations that stay pending, Retry-After values past the
/// polling bounds, orders that go backwards or turn invalid, authorizations for names nobody
/// asked for, garbage or someone else's certificate. It ignores signatures; it serves fresh
/// nonces, checks that finalize carries a base64url DER CSR and that the certificate is fetched
/// with Accept application/pem-certificate-chain, and counts every read.
final class FakeCA {
    let directory: TemporaryDirectory
    let server = Process()
    private(set) var port = 0

    /// What goes wrong. `retryAfter` is sent with every unfinished authorization or order.
    struct Scenario {
        var name: String
        var retryAfter: String = ""
    }

    static let script = #"""
        import base64, http.server, json, re, ssl, sys, threading, time
        port, cert, key, scenario, retry_after, names = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6].split(",")
        base = "https://127.0.0.1:%d" % port
        lock = threading.RLock()
        state = {"nonce": 0, "responded": set(), "finalized": False, "order_reads_after_finalize": 0}

        def authz_names():
            if scenario == "too-many-authz":
                return names * 3
            if scenario == "foreign-authz":
                return ["evil.test"]
            return names

        def challenge(i, kind, status):
            c = {"type": kind, "url": "%s/chall/%d/%s" % (base, i, kind), "token": "tok%d%s" % (i, kind.replace("-", "")), "status": status}
            if status == "invalid":
                c["error"] = {"type": "urn:ietf:params:acme:error:unauthorized", "detail": "Invalid response from http://a.test/\u0007: 404" + "x" * 5000}
            return c

        def authz(i):
            name = authz_names()[i]
            wildcard = name.startswith("*.")
            responded = i in state["responded"]
            if scenario.startswith("authz-pending"):
                status = "pending"
            elif scenario == "authz-invalid" and responded:
                status = "invalid"
            else:
                status = "valid" if responded else "pending"
            kinds = ["http-01", "dns-01", "tls-alpn-01"]
            if wildcard:
                kinds = ["http-01"] if scenario == "wildcard-no-dns" else ["dns-01"]
            chall_status = "invalid" if status == "invalid" else ("processing" if responded and status == "pending" else "pending")
            return {"identifier": {"type": "dns", "value": name[2:] if wildcard else name}, "status": status, "wildcard": wildcard,
                    "challenges": [challenge(i, k, chall_status) for k in kinds]}

        def order():
            o = {"identifiers": [{"type": "dns", "value": n} for n in (["other.test"] if scenario == "other-names" else names)],
                 "authorizations": ["%s/authz/%d" % (base, i) for i in range(len(authz_names()))], "finalize": base + "/finalize"}
            if scenario == "order-already-valid":
                o["status"] = "valid"; o["certificate"] = base + "/cert"
            elif not state["finalized"]:
                o["status"] = "ready" if len(state["responded"]) == len(authz_names()) else "pending"
            else:
                state["order_reads_after_finalize"] += 1
                reads = state["order_reads_after_finalize"]
                if scenario == "order-processing-forever":
                    o["status"] = "processing"
                elif scenario == "order-invalid" and reads > 1:
                    o["status"] = "invalid"; o["error"] = {"type": "urn:ietf:params:acme:error:badCSR", "detail": "key too weak"}
                elif scenario == "order-backwards" and reads > 1:
                    o["status"] = "pending"
                else:
                    o["status"] = "processing" if reads == 1 else "valid"
                    if o["status"] == "valid": o["certificate"] = base + "/cert"
            return o

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def reply(self, status, body=b"", headers=(), content_type="application/json"):
                if not isinstance(body, bytes): body = json.dumps(body).encode()
                with lock:
                    state["nonce"] += 1
                    nonce = "nonce%d" % state["nonce"]
                self.send_response(status)
                self.send_header("Replay-Nonce", nonce)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers: self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD": self.wfile.write(body)
            def problem(self, kind, detail):
                self.reply(400, {"type": "urn:ietf:params:acme:error:" + kind, "detail": detail}, content_type="application/problem+json")
            def do_HEAD(self): self.reply(200)
            def do_GET(self):
                if self.path == "/dir":
                    directory = {"newNonce": base + "/nonce", "newAccount": base + "/account", "newOrder": base + "/order"}
                    if scenario.startswith("ari-"):
                        directory["renewalInfo"] = base + "/renewal-info/"
                    self.reply(200, directory)
                elif self.path.startswith("/renewal-info/") and scenario.startswith("ari-"):
                    # RFC 9773: ari-now opens the window now (a CA about to revoke a batch),
                    # ari-late puts it after the certificate's end, ari-stale ends it in 2020
                    # (before the certificate began: an answer about a predecessor); the
                    # identifiers asked for are kept for /count.
                    state.setdefault("ari_ids", []).append(self.path[len("/renewal-info/"):])
                    now = time.time()
                    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
                    windows = {"ari-now": (stamp(now - 60), stamp(now + 2)),
                               "ari-late": ("2099-01-01T00:00:00Z", "2099-01-02T00:00:00Z"),
                               "ari-stale": ("2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z")}
                    start, end = windows[scenario]
                    self.reply(200, {"suggestedWindow": {"start": start, "end": end}}, [("Retry-After", "21600")])
                elif self.path == "/count":
                    self.reply(200, {"order_reads_after_finalize": state["order_reads_after_finalize"], "ari_ids": state.get("ari_ids", [])})
                else:
                    self.reply(404)
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                payload = base64.urlsafe_b64decode(body.get("payload", "") + "==") if body.get("payload") else b""
                unfinished = [("Retry-After", retry_after)] if retry_after else []
                with lock:
                    p = self.path
                    if p == "/account":
                        self.reply(201, {"status": "valid"}, [("Location", base + "/acct/1")])
                    elif p == "/order":
                        self.reply(201, order(), [("Location", base + "/order/1")])
                    elif p == "/order/1":
                        o = order()
                        self.reply(200, o, unfinished if o["status"] in ("pending", "processing") else [])
                    elif p.startswith("/authz/"):
                        a = authz(int(p[7:]))
                        self.reply(200, a, unfinished if a["status"] == "pending" else [])
                    elif p.startswith("/chall/"):
                        i, kind = p[7:].split("/")
                        state["responded"].add(int(i))
                        self.reply(200, challenge(int(i), kind, "processing"))
                    elif p == "/finalize":
                        csr = base64.urlsafe_b64decode(json.loads(payload)["csr"] + "==")
                        if not re.fullmatch(r"[A-Za-z0-9_-]+", json.loads(payload)["csr"]) or csr[:1] != b"\x30":
                            return self.problem("badCSR", "not a base64url DER CSR")
                        state["finalized"] = True
                        self.reply(200, order(), unfinished)
                    elif p == "/cert":
                        if self.headers.get("Accept") != "application/pem-certificate-chain":
                            return self.problem("malformed", "Accept is " + str(self.headers.get("Accept")))
                        if scenario == "cert-garbage":
                            self.reply(200, b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
                        else:
                            self.reply(200, open(cert, "rb").read(), content_type="application/pem-certificate-chain")
                    else:
                        self.reply(404)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        port = server.server_address[1]
        base = "https://127.0.0.1:%d" % port
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        announce(port, sys.argv[7])
        server.serve_forever()
        """#

    init(_ scenario: Scenario, names: [String]) throws {
        directory = try TemporaryDirectory(prefix: "acme-fake-ca")
        try Pebble.makeCertificates(in: directory)
        try directory.write("ca.py", Array((ReadyFile.python + Self.script).utf8))
        // The script binds port 0 and writes the port it got once it listens: a port picked here
        // and bound there could be taken meanwhile by another test's server, whose certificate
        // the client would then meet ("self-signed certificate", seen in CI).
        let portFile = directory.path("port")
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [
            Tool.python3, directory.path("ca.py"), "0", directory.path("cert.pem"), directory.path("key.pem"), scenario.name,
            scenario.retryAfter, names.joined(separator: ","), portFile,
        ]
        try server.run()
        port = ReadyFile.port(portFile, of: server) ?? 0
        if port == 0 { Issue.record("the fake CA did not listen") }
    }

    deinit {
        // SIGKILL, as HTTPSClientTests does (Python does not unblock SIGTERM in a test's child).
        server.killAndWait()
    }

    /// A client with an account at this CA.
    func client() throws -> ACMEClient {
        let client = ACMEClient(
            directoryURL: try ACMEURL("https://127.0.0.1:\(port)/dir"), key: try AccountKey.generate(),
            http: try HTTPSClient(configuration: .init(caFile: directory.path("ca.pem"))))
        try client.account()
        return client
    }
}

/// A solver that answers nothing for real and records every call, in order; `failOn` makes
/// `present` throw for that name.
final class RecordingSolver: ChallengeSolver {
    let types: [String]
    let failOn: String?
    let calls = Mutex<[String]>([])

    init(types: [String] = [ChallengeType.http01, ChallengeType.dns01], failOn: String? = nil) {
        self.types = types
        self.failOn = failOn
    }

    func present(type: String, name: String, token: String, keyAuthorization: String) throws(ACMEError) {
        calls.withLock { $0.append("present \(type) \(name) \(token)") }
        if name == failOn { throw .storage("cannot write the answer for \(name)") }
    }

    func cleanUp(type: String, name: String, token: String) {
        calls.withLock { $0.append("cleanUp \(type) \(name) \(token)") }
    }

    var recorded: [String] { calls.withLock { $0 } }
}
