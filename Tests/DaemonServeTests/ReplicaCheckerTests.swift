import DaemonTesting
import Foundation
import Glibc
import TestSupport
import Testing

/// One ownership checker per config volume (docs/api.md, "One checker per volume"): two daemons
/// on one config directory each run a checker, only the holder of `.aasad-verify/checker.lock`
/// makes requests, and when it stops the other takes over.
@Suite("ownership checks: one checker per config directory", .serialized)
struct ReplicaCheckerTests {
    static let holding = "this replica runs the ownership checks"

    @Test("two daemons on one directory: each new name is asked once, by one of them; when it stops, the other asks")
    func oneChecker() throws {
        let config = try TestConfig()
        let digest = try Tool.run("sha256sum", [], input: Array(ReplicaTests.token.utf8)).text.prefix(64)
        try config.write(
            "tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        let log = config.path("hits.log")
        let server = try StandInServer(mode: "count", body: log)
        let flags = [
            "--api-listen", "127.0.0.1:0", "--api-tokens-file", config.path("tokens.yaml"), "--api-verify-port", "\(server.port)",
            "--api-verify-private-addresses",
        ]
        let first = try TestDaemon(config: config, flags: flags)
        let second = try TestDaemon(config: config, flags: flags)
        func hits() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.hasPrefix("/.well-known/aasad-verify/") }.count
        }
        let names = ["n1.localhost", "n2.localhost", "n3.localhost"]
        for name in names {
            let put = try ReplicaTests.call(first, port: ReplicaTests.apiPort(first), "PUT", name, body: #"{"aasa":\#(ReplicaTests.aasa)}"#)
            #expect(put.status == 201 || put.status == 202, "\(put.status)")
        }
        #expect(eventually { hits() >= names.count })
        // Each failed check backs off 30 s: a second request for a name within this window is
        // the other replica asking too. Both read the records within 5 s (their refresh);
        // the window covers that and a pass after it.
        #expect(!eventually(attempts: 70) { hits() > names.count }, "\(hits()) requests for \(names.count) names")
        #expect(eventually { first.log().contains(Self.holding) != second.log().contains(Self.holding) })

        let (holder, other) = first.log().contains(Self.holding) ? (first, second) : (second, first)
        #expect(holder.stop())
        let put = try ReplicaTests.call(
            other, port: ReplicaTests.apiPort(other), "PUT", "m1.localhost", body: #"{"aasa":\#(ReplicaTests.aasa)}"#)
        #expect(put.status == 201 || put.status == 202, "\(put.status)")
        #expect(eventually { other.log().contains(Self.holding) })
        #expect(eventually { hits() == names.count + 1 }, "\(hits())")
    }
}
