import DaemonTesting
import Foundation
import TestSupport
import Testing

/// h2spec's stream-state and PRIORITY cases (RFC 9113 §5.1, §5.1.1, §5.3.1, §6.1, §6.3), the
/// frames h2spec sends written by Python (Fixtures/h2closed.py) over TLS to a daemon in this
/// process, one TLS record per frame as h2spec writes them, so that CI keeps them without h2spec
/// (scripts/h2spec.sh). The same frames go to a session directly in
/// Tests/HTTP2Tests/HTTP2ConformanceTests.swift.
@Suite("aasad serve: h2spec's stream-state and PRIORITY cases over TLS")
final class HTTP2ConformanceServeTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
    }

    @Test("each case ends the connection with the GOAWAY RFC 9113 gives it; what a client may still send on an ended stream is served on")
    func cases() throws {
        let server = try TestDaemon(config: config)
        let script = TestConfig.fixtures.appendingPathComponent("h2closed.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", Self.path])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(out.text.utf8)) as? [String: String], "\(out.text) \(out.stderr.suffix(300))")
        let streamClosed = "goaway 5"
        let protocolError = "goaway 1"
        let expected = [
            "5.1 #5 DATA on half-closed (remote)": streamClosed,
            "5.1 #6 HEADERS on half-closed (remote)": streamClosed,
            "5.1 #8 DATA after RST_STREAM": streamClosed,
            "5.1 #9 HEADERS after RST_STREAM": streamClosed,
            "5.1 #11 DATA on closed": streamClosed,
            "5.1 #12 HEADERS on closed": streamClosed,
            "5.1.1 #2 lower stream identifier": protocolError,
            "5.3.1 #2 PRIORITY on itself": protocolError,
            "6.1 #2 DATA after a POST's END_STREAM": streamClosed,
            "6.3 #1 PRIORITY on stream 0": protocolError,
            "allowed after END_STREAM": "ended",
        ]
        for (name, outcome) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(report[name] == outcome, "\(name): \(report[name] ?? "missing")")
        }
        #expect(report.count == expected.count, "\(report)")
        #expect(try server.https("a.test", Self.path, ["--http2"]).status == 200, "not served after the cases")
    }
}
