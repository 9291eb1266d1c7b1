import DaemonTesting
import Foundation
import Glibc
import TestSupport
import Testing

/// Two replicas on one ACME storage directory against pebble (docs/acme.md, "Several replicas,
/// one order"), and the order budget changed on the running manager ("The budget is shared, and
/// kept"). Both daemons listen on pebble's validation ports (SO_REUSEPORT: the kernel hands
/// each validation to either, as a load balancer would) and each on a port of its own, so a
/// test can ask one of them.
@Suite("serve: ACME replicas and the live budget against pebble", .serialized)
final class ACMEReplicaServeTests {
    let config: TestConfig
    let pebble: Pebble
    let root: String
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        (config, pebble, root) = try TestConfig.withPebble()
    }

    func serve() throws -> TestDaemon {
        try TestDaemon(config: config, flags: ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"])
    }

    func entry(_ daemon: TestDaemon, _ name: String) -> [String: Any] { (try? daemon.automaticCertificates())?[name] ?? [:] }
    func state(_ daemon: TestDaemon, _ name: String) -> String? { entry(daemon, name)["state"] as? String }

    @Test(
        "two replicas on one storage asked for the same new names at once: one order per name; the other serves the stored one without a restart; a holder killed mid-order costs two heartbeats' wait, not the stale rule's"
    )
    func oneOrderPerName() throws {
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 40")
        // 30 orders this hour: names nobody asked for (a.test, www.a.test) wait; 10 are kept for
        // demanded names, room for every name below to be ordered twice if the lock failed.
        try config.seedOrders(30)
        let names = (0..<5).map { "f\($0).test" }
        for name in names + ["crashed.test"] { try config.write("config/sites/\(name)/apple-app-site-association", config.aasa) }

        // Hostile: crashed.test's lock left by a holder on this machine killed mid-order
        // (`kill -9`): its file names this kernel's boot id and no one holds its flock.
        let bootID = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let lock = config.path("acme/locks/crashed.test.lock")
        try config.write(
            "acme/locks/crashed.test.lock", Array(#"{"owner":"gone","updated":1,"heartbeat":3,"boot":"\#(bootID)","pid":1}"#.utf8) + [0x0A])
        let holder = try processHoldingFlock(lock)
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()

        let first = try serve()
        let second = try serve()
        let both = [first, second]
        for daemon in both {
            #expect(eventually(attempts: 300) { names.allSatisfy { self.state(daemon, $0) == "queued" } }, "\(entry(daemon, "f0.test"))")
        }
        // At once: each name's first handshake on both replicas, from two threads.
        let ports = both.map(\.httpsPort)
        let asked = names + ["crashed.test"]
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            for name in asked { _ = HandBuiltClientHello.send(serverName: name, port: ports[i]) }
        }
        let start = Date()
        for daemon in both {
            #expect(
                eventually(attempts: 600) { (names + ["crashed.test"]).allSatisfy { self.state(daemon, $0) == "valid" } },
                "\((try? daemon.automaticCertificates()) ?? [:]) orders \(config.orderLog())")
        }
        // The dead holder's lock was taken after StorageLock.deadHolderAfter (10 s), not after
        // staleAfter (30 s, and then the order).
        #expect(Date().timeIntervalSince(start) < 30, "\(Date().timeIntervalSince(start)) s")
        // One order per name, counted in the shared log, at pebble, and by the daemons.
        let placed = Array(config.orderLog().dropFirst(30))
        #expect(placed.sorted() == (names + ["crashed.test"]).sorted(), "\(placed)")
        #expect(pebble.issuedCount() == names.count + 1)
        let counts = try both.map { try Metrics($0) }
        let issued = counts.map { $0["aasad_acme_orders_total", ["result": "issued"]] }
        let pickedUp = counts.map { $0["aasad_acme_certificates_picked_up_total"] }
        #expect(issued.reduce(0, +) == Double(names.count + 1), "\(issued)")
        // The replica that did not order a name served the other's from storage, without a restart.
        #expect(pickedUp.reduce(0, +) == Double(names.count + 1), "\(pickedUp)")
        // Each replica's view read once, a read the admin listener failed under load asked again
        // (not taken for a view without the name).
        func view(_ daemon: TestDaemon) -> [String: [String: Any]] {
            var read: [String: [String: Any]] = [:]
            _ = eventually(attempts: 50) {
                guard let certificates = try? daemon.automaticCertificates() else { return false }
                read = certificates
                return true
            }
            return read
        }
        let firstView = view(first)
        for daemon in both {
            let seen = view(daemon)
            for name in names + ["crashed.test"] {
                #expect((try? daemon.https(name, Self.path, cacert: root))?.status == 200, "\(name)")
                #expect(firstView[name]?["notAfter"] as? Int != nil, "\(name): \(firstView[name] ?? [:])")
                #expect(seen[name]?["notAfter"] as? Int == firstView[name]?["notAfter"] as? Int, "\(name)")
            }
        }
        #expect(first.stop())
        #expect(second.stop())
    }

    @Test(
        "a live change of orders-per-hour keeps the running manager: the order in flight is not placed again, a failed name keeps its back-off, counters go on"
    )
    func liveBudget() throws {
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 8")
        // 6 of 8 spent: the backlog waits; two orders are kept for demanded names.
        try config.seedOrders(6)
        for site in ["fail.test", "slow.test"] { try config.write("config/sites/\(site)/apple-app-site-association", config.aasa) }
        // fail.test resolves where nothing answers pebble's validation: its order fails.
        try pebble.resolve("fail.test", to: "127.0.0.2")
        let daemon = try serve()
        #expect(eventually(attempts: 300) { self.state(daemon, "fail.test") == "queued" })
        _ = HandBuiltClientHello.send(serverName: "fail.test", port: daemon.httpsPort)
        #expect(eventually(attempts: 600) { self.state(daemon, "fail.test") == "failed" }, "\(entry(daemon, "fail.test"))")
        let nextAttempt = try #require(entry(daemon, "fail.test")["nextAttempt"] as? Int)

        // slow.test's order in flight, its CA stalled, while the budget changes.
        _ = HandBuiltClientHello.send(serverName: "slow.test", port: daemon.httpsPort)
        #expect(
            eventually(attempts: 600, interval: 0.02) { self.state(daemon, "slow.test") == "ordering" }, "\(entry(daemon, "slow.test"))")
        pebble.suspend()
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 14")
        let applied = daemon.waitForLog("aasad.yaml applied")
        pebble.resume()
        #expect(applied)
        #expect(daemon.log().contains("order budget changed"))
        #expect(
            eventually(attempts: 600) { self.state(daemon, "slow.test") == "valid" }, "\(entry(daemon, "slow.test")) \(config.orderLog())")
        #expect((try? daemon.https("slow.test", Self.path, cacert: root))?.status == 200)

        // Neither name was ordered again: fail.test waits out its back-off, slow.test's order was
        // not placed twice. The raised budget opened the backlog's share (11 of 14): a.test and
        // www.a.test go now.
        #expect(eventually(attempts: 600) { self.state(daemon, "a.test") == "valid" && self.state(daemon, "www.a.test") == "valid" })
        let placed = Array(config.orderLog().dropFirst(6))
        #expect(placed.filter { $0 == "fail.test" }.count == 1 && placed.filter { $0 == "slow.test" }.count == 1, "\(placed)")
        #expect(placed.count == 4, "\(placed)")
        #expect(state(daemon, "fail.test") == "failed")
        #expect(entry(daemon, "fail.test")["nextAttempt"] as? Int == nextAttempt)
        // The same manager: its counters went on, and it started once.
        let metrics = try Metrics(daemon)
        #expect(metrics["aasad_acme_orders_total", ["result": "failed"]] == 1)
        #expect(metrics["aasad_acme_orders_total", ["result": "issued"]] == 3)
        #expect(daemon.log().components(separatedBy: "automatic certificates on").count == 2)
        #expect(pebble.issuedCount() == 3)
        #expect(daemon.stop())
    }
}
