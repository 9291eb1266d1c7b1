import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// The certificate manager against real pebble: issuance and renewal with a clock the test
/// moves, two managers (as two replicas) on one storage directory, the order budget's queue, a
/// CA that is down, a wildcard through the DNS hook, and names leaving the config.
@Suite("ACME certificate manager", .serialized)
final class CertificateManagerTests {
    let pebble: Pebble
    let folder: TemporaryDirectory
    let responder: HTTP01Responder
    /// Seconds added to the real time: how the test moves the managers' clock.
    let offset = TestClock()

    init() throws {
        folder = try TemporaryDirectory(prefix: "acme-manager")
        responder = try HTTP01Responder(folder: folder.path("storage/challenges/http-01"), portFile: folder.path("responder-port"))
        pebble = try Pebble(resolveEverythingToLoopback: true, httpPort: responder.port)
    }

    var clock: CertificateManager.Clock {
        let offset = self.offset
        return CertificateManager.Clock(now: { Int64(time(nil)) + offset() }, monotonic: CertificateManager.Clock.system.monotonic)
    }

    func manager(
        storage: String = "storage", ca: Pebble? = nil, ordersPerHour: Int = 60, dnsHook: String? = nil, rescan: Int64 = 1
    ) throws -> CertificateManager {
        let configuration = CertificateManager.Configuration(
            directory: try ACMEURL((ca ?? pebble).directory), directoryCA: (ca ?? pebble).caFile, storage: folder.path(storage),
            challenges: ["http-01"], dnsHook: dnsHook, ordersPerHour: ordersPerHour, rescanInterval: rescan)
        return try CertificateManager(
            configuration: configuration, clock: clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Waits (at most 90 s) until every named status satisfies `condition`.
    func waitFor(_ manager: CertificateManager, _ names: [String], _ condition: (CertificateStatus) -> Bool) -> Bool {
        eventually(attempts: 900, interval: 0.1) {
            let statuses = manager.statusesByName().statuses
            return names.allSatisfy { statuses[$0].map(condition) ?? false }
        }
    }

    @Test("issues each wanted name once, serves it by name only, and renews when a third of the lifetime is left")
    func issueAndRenew() throws {
        let manager = try manager()
        defer { manager.stop() }
        manager.want(["a.test", "b.test"])
        manager.start()
        #expect(waitFor(manager, ["a.test", "b.test"]) { $0.state == .valid }, "\(manager.statuses())")
        #expect(manager.counters().issued == 2)
        let first = try #require(manager.certificate(for: "a.test"))
        #expect(manager.certificate(for: "c.test") == nil)
        #expect(manager.certificate(for: "x.a.test") == nil)
        #expect(try Tool.run("openssl", ["x509", "-noout", "-ext", "subjectAltName"], input: first.chainPEM).text.contains("DNS:a.test"))
        // Move the clock past the renewal time (a third of the lifetime before the end).
        let status = try #require(manager.statusesByName().statuses["a.test"])
        let renewAt = try #require(status.renewAt)
        let ahead = renewAt - Int64(time(nil)) + 5
        offset.advance(ahead)
        manager.want(["a.test", "b.test"])
        #expect(eventually(attempts: 900) { manager.counters().issued == 4 }, "\(manager.statuses())")
        #expect(manager.certificate(for: "a.test")?.identity != first.identity)
        // pebble's certificates all last the same: with the clock still ahead, the new ones are
        // due at once too. The manager backs off rather than ordering again and again.
        #expect(waitFor(manager, ["a.test", "b.test"]) { $0.state == .failed && $0.error?.contains("already due") == true })
        // A sleep, not a wait: what is checked is that nothing happens (no new order), and the
        // manager shows no count of its passes to wait on.
        Thread.sleep(forTimeInterval: 2)
        #expect(manager.counters().issued == 4)
        offset.advance(-ahead)
    }

    @Test("two managers on one storage: one order per name, the same certificate served by both")
    func twoReplicas() throws {
        let names = ["a.test", "b.test", "c.test"]
        let one = try manager()
        let two = try manager()
        defer {
            one.stop()
            two.stop()
        }
        one.want(Set(names))
        two.want(Set(names))
        one.start()
        two.start()
        #expect(waitFor(one, names) { $0.state == .valid }, "\(one.statuses())")
        #expect(waitFor(two, names) { $0.state == .valid }, "\(two.statuses())")
        for name in names { #expect(one.certificate(for: name)?.identity == two.certificate(for: name)?.identity) }
        #expect(one.counters().issued + two.counters().issued == names.count)
        let log = try String(contentsOfFile: folder.path("storage/orders.log"), encoding: .utf8)
        #expect(log.split(separator: "\n").count == names.count, "\(log)")
    }

    @Test("two managers on one storage: a name the CA fails on one is not ordered by the other before the back-off ends")
    func failedOrderBacksOffBoth() throws {
        // Its own storage: the HTTP-01 responder serves the other one's answers, so pebble's
        // validation of every order placed here fails.
        let failing = try manager(storage: "storage-fail")
        let other = try manager(storage: "storage-fail")
        defer {
            failing.stop()
            other.stop()
        }
        failing.want(["fail.test"])
        other.want(["fail.test"])
        failing.start()
        #expect(waitFor(failing, ["fail.test"]) { $0.state == .failed }, "\(failing.statuses())")
        let next = try #require(failing.status(of: "fail.test")?.nextAttempt)
        other.start()
        #expect(waitFor(other, ["fail.test"]) { $0.state == .failed }, "\(other.statuses())")
        #expect(other.status(of: "fail.test")?.nextAttempt == next)
        #expect(other.counters().failed == 0)
        // One order placed at the CA (each is logged just before pebble is asked for it).
        let log = try String(contentsOfFile: folder.path("storage-fail/orders.log"), encoding: .utf8)
        #expect(log.split(separator: "\n").count == 1, "\(log)")
    }

    @Test("the order budget: the rest wait in the queue, oldest first, until the hour has passed")
    func budget() throws {
        // Three an hour: names nobody asked for spend two, one is kept for renewals and demand.
        let manager = try manager(ordersPerHour: 3)
        defer { manager.stop() }
        manager.want(["a.test", "b.test"])
        manager.want(["a.test", "b.test", "c.test", "d.test"])
        manager.start()
        #expect(waitFor(manager, ["a.test", "b.test"]) { $0.state == .valid }, "\(manager.statuses())")
        #expect(waitFor(manager, ["c.test", "d.test"]) { $0.state == .queued })
        // A sleep, not a wait: what is checked is that the queued names stay unordered, and the
        // manager shows no count of its passes to wait on.
        Thread.sleep(forTimeInterval: 1.5)
        #expect(manager.counters().issued == 2)
        #expect(manager.counters().queued == 2)
        offset.advance(3601)
        manager.want(["a.test", "b.test", "c.test", "d.test"])
        #expect(waitFor(manager, ["c.test", "d.test"]) { $0.state == .valid }, "\(manager.statuses())")
    }

    @Test("the CA down: stored certificates are served at once, a new name fails and backs off a minute")
    func caDown() throws {
        let first = try manager()
        first.want(["a.test"])
        first.start()
        #expect(waitFor(first, ["a.test"]) { $0.state == .valid })
        first.stop()
        pebble.stop()
        let restarted = try manager()
        defer { restarted.stop() }
        restarted.want(["a.test", "new.test"])
        restarted.loadStored()
        // Before the thread runs: the stored certificate is there, no network call made.
        #expect(restarted.certificate(for: "a.test") != nil)
        restarted.start()
        #expect(waitFor(restarted, ["new.test"]) { $0.state == .failed }, "\(restarted.statuses())")
        let failed = try #require(restarted.statusesByName().statuses["new.test"])
        #expect(failed.error?.contains("no answer from the CA") == true, "\(failed)")
        let wait = (failed.nextAttempt ?? 0) - clock.now()
        #expect(wait >= 50 && wait <= 60, "next attempt in \(wait) s")
        #expect(restarted.statusesByName().statuses["a.test"]?.state == .valid)
        // No order could be placed: none is taken from the budget.
        let log = try String(contentsOfFile: folder.path("storage/orders.log"), encoding: .utf8)
        #expect(!log.contains("new.test"), "\(log)")
    }

    @Test("a wildcard waits for a DNS hook; with one it is issued over DNS-01 and serves names under it")
    func wildcard() throws {
        let without = try manager()
        without.want(["*.w.test"])
        without.start()
        #expect(waitFor(without, ["*.w.test"]) { $0.state == .needsDNSHook })
        without.stop()
        let dns = try Pebble(answerChallenges: true)
        try folder.write(
            "hook",
            Array(
                """
                #!/bin/sh
                # add|remove NAME VALUE, through pebble-challtestsrv's management API.
                case "$1" in
                  add) curl -sS --fail -d "{\\"host\\":\\"$2.\\",\\"value\\":\\"$3\\"}" http://127.0.0.1:\(dns.challengeManagementPort)/set-txt ;;
                  remove) curl -sS --fail -d "{\\"host\\":\\"$2.\\"}" http://127.0.0.1:\(dns.challengeManagementPort)/clear-txt ;;
                esac

                """.utf8))
        chmod(folder.path("hook"), 0o755)
        let with = try manager(storage: "storage-dns", ca: dns, dnsHook: folder.path("hook"))
        defer { with.stop() }
        with.want(["*.w.test"])
        with.start()
        #expect(waitFor(with, ["*.w.test"]) { $0.state == .valid }, "\(with.statuses())")
        #expect(with.certificate(for: "x.w.test") != nil)
        #expect(with.certificate(for: "w.test") == nil)
        #expect(with.certificate(for: "a.x.w.test") == nil)
    }

    @Test("a name that leaves the config is no longer served or renewed")
    func removed() throws {
        let manager = try manager()
        defer { manager.stop() }
        manager.want(["a.test"])
        manager.start()
        #expect(waitFor(manager, ["a.test"]) { $0.state == .valid })
        manager.want([])
        #expect(manager.certificate(for: "a.test") == nil)
        #expect(manager.statuses().isEmpty)
        // Stored, but not wanted: a new manager that wants other names does not serve it, while
        // one that wants it does.
        let later = try self.manager()
        later.want(["b.test"])
        later.loadStored()
        #expect(later.certificate(for: "a.test") == nil)
        let wanting = try self.manager()
        wanting.want(["a.test"])
        wanting.loadStored()
        #expect(wanting.certificate(for: "a.test") != nil)
    }
}

/// A plain HTTP server on loopback that answers HTTP-01 validations from a storage directory's
/// `challenges/http-01` folder, standing in for aasad's plain listener. It binds port 0 and
/// announces its port (`ReadyFile`), which pebble is then told (pebble's VA only connects there).
final class HTTP01Responder {
    let process = Process()
    let port: Int

    init(folder: String, portFile: String) throws {
        let script =
            ReadyFile.python + """
                import http.server, os, sys
                root = sys.argv[2]
                prefix = "/.well-known/acme-challenge/"
                class Handler(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        token = self.path[len(prefix):] if self.path.startswith(prefix) else ""
                        path = os.path.join(root, token)
                        if token and "/" not in token and os.path.isfile(path):
                            body = open(path, "rb").read()
                            self.send_response(200)
                            self.send_header("Content-Length", str(len(body)))
                            self.end_headers()
                            self.wfile.write(body)
                            return
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    def log_message(self, *args):
                        pass
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
                announce(server.server_address[1], sys.argv[1])
                server.serve_forever()
                """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [Tool.python3, "-c", script, portFile, folder]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let port = ReadyFile.port(portFile, of: process) else {
            process.killAndWait()
            throw PebbleError("the HTTP-01 responder announced no port")
        }
        self.port = port
    }

    deinit {
        // SIGKILL: a child of the test runner inherits its blocked signals, SIGTERM among them.
        process.killAndWait()
    }
}

extension CertificateManager {
    /// `want` with each name a site of its own, for the tests that are not about sites.
    func want(_ names: Set<String>) { want(Dictionary(uniqueKeysWithValues: names.map { ($0, [$0]) })) }
}
