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
    /// A name's HTTP server on loopback that never gives the answer (so every check fails and backs
    /// off 30 s) and writes each path it is asked to `log`.
    final class CountingServer {
        let process = Process()
        let port: Int
        static let script = #"""
            import http.server, sys
            class H(http.server.BaseHTTPRequestHandler):
                def log_message(self, *a): pass
                def do_GET(self):
                    with open(sys.argv[1], "a") as f: f.write(self.path + "\n")
                    self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
            s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """#

        init(log: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", Self.script, log]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line: [UInt8] = []
            while let byte = try out.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
            port = Int(String(decoding: line, as: UTF8.self)) ?? 0
        }

        deinit {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    static let holding = "this replica runs the ownership checks"

    @Test("two daemons on one directory: each new name is asked once, by one of them; when it stops, the other asks")
    func oneChecker() throws {
        let config = try TestConfig()
        let digest = try Tool.run("sha256sum", [], input: Array(ReplicaTests.token.utf8)).text.prefix(64)
        try config.write(
            "tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        let log = config.path("hits.log")
        let server = try CountingServer(log: log)
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
