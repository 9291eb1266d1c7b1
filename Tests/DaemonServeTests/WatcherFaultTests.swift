import DaemonTesting
import Foundation
import TestSupport
import Testing

@Suite("Watched config directory under fault injection")
final class WatcherFaultTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    private func version(_ n: Int, padding: Int = 0) -> [UInt8] {
        Array(
            #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/v\#(n)/*", "comment": "\#(String(repeating: "x", count: padding))"}]}]}}"#
                .utf8)
    }

    private var filePath: String { config.path("config/sites/a.test/apple-app-site-association") }

    /// Waits until the loop has seen `body`; returns how long after `since` it was first seen. The
    /// bound (10 s) is far above the latency printed at the end: a full rescan (a ConfigMap swap)
    /// on a loaded two-core machine took over 2 s.
    private func waitFor(_ loop: FetchLoop, _ body: [UInt8], since: Date) -> TimeInterval? {
        var seen: Date?
        _ = eventually(attempts: 500, interval: 0.02) {
            seen = loop.seen(body)
            return seen != nil
        }
        return seen?.timeIntervalSince(since)
    }

    /// Waits until the server has refused one more change than `before` (its reload failure
    /// count): it has read what was written, while the fetch loop went on.
    private func waitForRefusal(after before: Double) throws -> Double {
        let metrics = try Metrics.wait(server) { $0["aasad_config_reload_failures_total"] > before }
        #expect(metrics["aasad_config_reload_failures_total"] > before, "the change was never refused")
        return metrics["aasad_config_reload_failures_total"]
    }

    /// Writes a file in pieces, in place, with pauses between them (an editor or a slow copy).
    private func writeInPieces(_ bytes: [UInt8], pieces: Int, pause: useconds_t) {
        let fd = open(filePath, O_WRONLY | O_TRUNC)
        let size = (bytes.count + pieces - 1) / pieces
        for start in stride(from: 0, to: bytes.count, by: size) {
            _ = bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            // The pause is the input: a writer slow enough that the server sees the file half
            // written between two pieces.
            usleep(pause)
        }
        close(fd)
    }

    /// Writes a whole file under another name and renames it over the served one (atomic replace).
    private func replaceAtomically(_ bytes: [UInt8]) throws {
        let tmp = filePath + ".tmp"
        try Data(bytes).write(to: URL(fileURLWithPath: tmp))
        rename(tmp, filePath)
    }

    @Test("a client fetching all the time sees only complete good versions, or 404 after deletion")
    func faultInjection() throws {
        let loop = FetchLoop(port: server.httpPort, host: "a.test", allowing: [config.aasa])
        var latencies: [TimeInterval] = []

        // Partial in-place writes: held until the file is closed.
        let v1 = version(1)
        loop.allow(v1)
        let t1 = Date()
        writeInPieces(v1, pieces: 4, pause: 150_000)
        if let l = waitFor(loop, v1, since: Date()) {
            latencies.append(l)
        } else {
            Issue.record("v1 never served (\(Date().timeIntervalSince(t1)) s)")
        }

        // Invalid JSON, then an oversize file: the last good version stays.
        var refused = try Metrics(server)["aasad_config_reload_failures_total"]
        try Data(#"{"applinks": {"#.utf8).write(to: URL(fileURLWithPath: filePath))
        refused = try waitForRefusal(after: refused)
        try Data(version(2, padding: 140_000)).write(to: URL(fileURLWithPath: filePath))
        _ = try waitForRefusal(after: refused)

        // Atomic rename-over.
        let v3 = version(3)
        loop.allow(v3)
        let t3 = Date()
        try replaceAtomically(v3)
        if let l = waitFor(loop, v3, since: t3) { latencies.append(l) } else { Issue.record("v3 never served") }

        // 1,000 rapid edits, alternating in-place writes and renames.
        var last = v3
        for i in 0..<1000 {
            let v = version(1000 + i)
            loop.allow(v)
            if i % 2 == 0 { try Data(v).write(to: URL(fileURLWithPath: filePath)) } else { try replaceAtomically(v) }
            last = v
        }
        let tLast = Date()
        if let l = waitFor(loop, last, since: tLast) { latencies.append(l) } else { Issue.record("the last rapid edit never served") }

        // Kubernetes: sites/k.test -> ..data/k.test, ..data -> ..v1, swapped to ..v2 atomically.
        let sites = config.path("config/sites")
        try config.write("config/sites/..v1/k.test/apple-app-site-association", version(50))
        symlink("..v1", sites + "/..data")
        symlink("..data/k.test", sites + "/k.test")
        // 404 until the first version is picked up.
        let kLoop = FetchLoop(port: server.httpPort, host: "k.test", allowing: [version(50)], allow404: true)
        // 404 counts again only once the first version has been served (bounded: 10 s).
        #expect(eventually { kLoop.seen(version(50)) != nil }, "k.test was never served")
        kLoop.setAllow404(false)
        try config.write("config/sites/..v2/k.test/apple-app-site-association", version(51))
        kLoop.allow(version(51))
        symlink("..v2", sites + "/..data_tmp")
        let tK = Date()
        rename(sites + "/..data_tmp", sites + "/..data")
        if let l = waitFor(kLoop, version(51), since: tK) {
            latencies.append(l)
        } else {
            Issue.record("the ConfigMap swap was not picked up")
        }
        try? FileManager.default.removeItem(atPath: sites + "/..v1")

        // Directory rename away and back: 404 while it is gone is right.
        loop.setAllow404(true)
        rename(sites + "/a.test", sites + "/a2.test")
        #expect(eventually { (try? server.http("a.test", "/.well-known/apple-app-site-association").status) == 404 })
        rename(sites + "/a2.test", sites + "/a.test")
        #expect(eventually { (try? server.http("a.test", "/.well-known/apple-app-site-association").body) == last })
        // A few more answers, all allowed a 404, before 404 counts again: a fetch sent before the
        // directory came back may be answered after it.
        let answered = loop.count
        #expect(eventually(interval: 0.02) { loop.count >= answered + 5 })
        loop.setAllow404(false)

        // Deletion: 404 from then on.
        loop.setAllow404(true)
        try FileManager.default.removeItem(atPath: filePath)
        #expect(eventually { (try? server.http("a.test", "/.well-known/apple-app-site-association").status) == 404 })

        let violations = loop.stop() + kLoop.stop()
        #expect(violations.isEmpty, "\(violations.prefix(10))")
        #expect(loop.count > 100, "the client loop fetched too rarely to prove anything")
        let sorted = latencies.sorted()
        print("reload latency (close to first served), seconds: \(sorted.map { String(format: "%.3f", $0) }.joined(separator: " "))")
        #expect(server.stop())
        let log = server.log()
        #expect(log.contains("serving the last good version: a.test"))
    }
}
