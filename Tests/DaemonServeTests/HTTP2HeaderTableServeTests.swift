import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The HPACK table a client may fill in the server's decoder (`HTTP2Session.headerTableSize`):
/// the protocol's 4,096 bytes, never lowered, seen by Python's h2 over a real connection, on a
/// daemon in this process.
@Suite("aasad serve: the HTTP/2 header table")
final class HTTP2HeaderTableServeTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
    }

    @Test("a client sees a header table of 4,096 bytes; a large value it repeats is indexed after the acknowledgement, and is served")
    func repeatedValueIsIndexed() throws {
        let server = try TestDaemon(config: config)
        let script = TestConfig.fixtures.appendingPathComponent("h2table.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", Self.path])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(out.text.utf8)) as? [String: Any], "\(out.text) \(out.stderr.suffix(300))")
        #expect(report["header_table_size"] as? Int == 4_096, "\(report)")
        #expect(report["statuses"] as? [String] == ["200", "200"], "\(report)")
        // The 3,000-byte User-Agent, Huffman-coded, is about 2.7 KB; indexed, it is one byte, and
        // the request needs no table size update (the server never lowered the table).
        let second = try #require(report["second_bytes"] as? Int)
        #expect(second < 200, "the second request's HEADERS took \(second) bytes: the value was not indexed")
    }
}
