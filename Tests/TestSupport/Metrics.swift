package import Foundation
import Testing

/// What serves an admin listener a test can fetch pages from: the binary (Tests/aasadTests'
/// `RunningServer`) or a daemon in the test process (Tests/DaemonTesting's `TestDaemon`).
package protocol AdminPages {
    func admin(_ path: String) throws -> HTTPResult
}

/// A scrape of a server's /metrics, parsed by a Prometheus text-format parser outside the code
/// under test (Tests/aasadTests/Fixtures/metrics.py, prometheus_client's).
package struct Metrics {
    package let samples: [String: Double]
    /// Family name (without `_total` for counters, as the parser names them) → type and help.
    package let families: [String: (type: String, help: String)]

    static let parser = TestConfig.fixtures.appendingPathComponent("metrics.py").path

    package init(_ server: some AdminPages) throws {
        let page = try server.admin("/metrics")
        #expect(page.status == 200)
        #expect(page.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let out = try Tool.run("python3", [Self.parser], input: page.body)
        guard out.status == 0 else { throw Failure(description: "/metrics does not parse: \(out.stderr)") }
        let json = try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [String: Any] ?? [:]
        samples = (json["samples"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
        families = (json["families"] as? [String: [String: String]] ?? [:]).mapValues { ($0["type"] ?? "", $0["help"] ?? "") }
    }

    /// A sample's value; 0 when the series does not exist (yet).
    package subscript(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples[name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"] ?? 0
    }

    /// Every series of a metric.
    package func series(_ name: String) -> [String] { samples.keys.filter { $0.hasPrefix(name + "{") } }

    /// Scrapes until `done` holds (10 s at most) and returns the last scrape.
    package static func wait(_ server: some AdminPages, until done: (Metrics) -> Bool) throws -> Metrics {
        var metrics = try Metrics(server)
        _ = try eventually {
            if done(metrics) { return true }
            metrics = try Metrics(server)
            return done(metrics)
        }
        return metrics
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }
}
