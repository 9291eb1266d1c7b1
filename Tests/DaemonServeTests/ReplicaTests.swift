import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Two replicas on one config directory, as on a shared volume (docs/api.md, "Several
/// replicas"): a write through one is served and read through the other once the other's
/// watcher has seen it; a replica with `api.read-only` refuses writes with its reason.
@Suite("tenant API: two replicas on one config directory", .serialized)
struct ReplicaTests {
    static let token = "replica-test-platform-token"
    static let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/r/*"}]}]}}"#

    /// The API's port from the ready line (`api=127.0.0.1:PORT`).
    static func apiPort(_ daemon: TestDaemon) -> Int {
        guard let line = daemon.outputLines.first(where: { $0.hasPrefix("aasad ready:") }),
            let range = line.range(of: " api=")
        else { return 0 }
        let address = line[range.upperBound...].prefix { $0 != " " }
        return Int(address.split(separator: ":").last ?? "") ?? 0
    }

    static func call(_ daemon: TestDaemon, port: Int, _ method: String, _ host: String, body: String? = nil) throws -> HTTPResult {
        var arguments = ["-X", method, "-H", "Authorization: Bearer \(token)", "http://127.0.0.1:\(port)/v1/sites/\(host)"]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        return try daemon.curl(arguments)
    }

    @Test(
        "a PUT through one replica is read and served through the other; a DELETE likewise; the read-only one answers 405 with its reason")
    func sharedDirectory() throws {
        let config = try TestConfig()
        let digest = try Tool.run("sha256sum", [], input: Array(Self.token.utf8)).text.prefix(64)
        try config.write(
            "tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        let flags = ["--api-listen", "127.0.0.1:0", "--api-tokens-file", config.path("tokens.yaml")]
        let writer = try TestDaemon(config: config, flags: flags)
        let reader = try TestDaemon(config: config, flags: flags + ["--api-read-only"])
        let (writerPort, readerPort) = (Self.apiPort(writer), Self.apiPort(reader))
        #expect(writerPort != 0 && readerPort != 0 && writerPort != readerPort)
        let host = "replica.example"

        // The writer's PUT waits until the writer serves the site (201), not the other replica.
        let put = try Self.call(writer, port: writerPort, "PUT", host, body: #"{"aasa":\#(Self.aasa)}"#)
        #expect(put.status == 201, "\(String(decoding: put.body, as: UTF8.self))")
        // The other replica's watcher sees the new directory: its GET reads it as served, and its
        // listener serves the file.
        #expect(
            try eventually {
                let got = try Self.call(reader, port: readerPort, "GET", host)
                return got.status == 200 && String(decoding: got.body, as: UTF8.self).contains(#""served":true"#)
            })
        #expect(try eventually { try reader.http(host, "/.well-known/apple-app-site-association").status == 200 })

        // A write on the read-only replica: 405, the reason named, nothing written.
        let refused = try Self.call(reader, port: readerPort, "PUT", "other.example", body: #"{"aasa":\#(Self.aasa)}"#)
        #expect(refused.status == 405)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("api.read-only"))
        #expect(!FileManager.default.fileExists(atPath: config.config + "/sites/other.example"))
        #expect(try Self.call(reader, port: readerPort, "DELETE", host).status == 405)

        // The writer's DELETE: gone from the other replica too.
        #expect(try Self.call(writer, port: writerPort, "DELETE", host).status == 204)
        #expect(try eventually { try Self.call(reader, port: readerPort, "GET", host).status == 404 })
        #expect(try eventually { try reader.http(host, "/.well-known/apple-app-site-association").status != 200 })
    }
}
