import Foundation
import TestSupport
import Testing

/// The tenant API's ownership check against the built `aasad serve`: the public answer on the
/// plain and HTTPS listeners, and the ACME gate against pebble (no order for an unverified name,
/// an order once it is verified).
@Suite("serve: the ownership check before certificates", .serialized)
final class VerificationServeTests {
    static let token = "verification-platform-token"

    /// The tokens file with one platform token, and the flags of an API whose checker fetches
    /// `verifyPort`. The API listens on a port of its own choosing (port 0; `RunningServer.apiPort`
    /// reads it from the ready line): one picked here could be taken before aasad binds it.
    static func apiFlags(_ config: TestConfig, verifyPort: Int) throws -> [String] {
        let digest = try Tool.run("sha256sum", [], input: Array(token.utf8)).text.prefix(64)
        try config.write(
            "api-tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        return [
            "--api-listen", "127.0.0.1:0", "--api-tokens-file", config.path("api-tokens.yaml"), "--api-verify-port",
            "\(verifyPort)", "--api-verify-private-addresses",
        ]
    }

    static func api(_ config: TestConfig, _ port: Int, _ method: String, _ path: String, body: String? = nil) throws -> HTTPResult {
        var arguments = ["-X", method, "-H", "Authorization: Bearer \(token)"]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        return try Curl.run(arguments + ["http://127.0.0.1:\(port)\(path)"], scratch: config.root.path)
    }

    static func json(_ result: HTTPResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(result.body)) as? [String: Any]) ?? [:]
    }

    /// The answer computed apart from aasad (Python's hmac) from the key file.
    static func expected(_ config: TestConfig, name: String, token: String) throws -> String {
        let script = """
            import base64, hashlib, hmac, sys
            key = open(sys.argv[1], "rb").read()
            mac = hmac.new(key, b"aasad-verify\\0" + sys.argv[2].encode() + b"\\0" + sys.argv[3].encode(), hashlib.sha256).digest()
            sys.stdout.write(base64.urlsafe_b64encode(mac).decode().rstrip("="))
            """
        return try Tool.run("python3", ["-c", script, config.path("config/.aasad-verify/key"), name, token]).text
    }

    static func record(_ config: TestConfig, _ name: String) -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: config.path("config/.aasad-verify/names/\(name).json")) else { return [:] }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    @Test("the public answer: only for that Host and its current token, on plain HTTP before the redirect and on HTTPS")
    func publicAnswer() throws {
        let config = try TestConfig()
        // Nothing listens where the checker looks: the name stays unverified.
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        let server = try RunningServer(
            config: config, extra: try Self.apiFlags(config, verifyPort: nobody.port) + ["--http-redirect"])
        defer { _ = server.stop() }
        let body = #"{"aasa":\#(String(decoding: config.aasa, as: UTF8.self))}"#
        let put = try Self.api(config, server.apiPort, "PUT", "/v1/sites/v.localhost", body: body)
        #expect(put.status == 201, "\(String(decoding: put.body, as: UTF8.self))")
        #expect(Self.json(put)["verification"] as? String == "unverified")
        _ = try Self.api(config, server.apiPort, "PUT", "/v1/sites/w.localhost", body: body)
        let token = try #require(Self.record(config, "v.localhost")["token"] as? String)
        let other = try #require(Self.record(config, "w.localhost")["token"] as? String)
        let path = "/.well-known/aasad-verify/\(token)"
        // Hostile first: another name's Host, another name's token, a token a byte longer, an
        // overlong token, a percent-encoded token, a dot segment, a POST.
        #expect(try server.http("w.localhost", path).status == 404)
        #expect(try server.http("v.localhost", "/.well-known/aasad-verify/\(other)").status == 404)
        #expect(try server.http("v.localhost", path + "A").status == 404)
        #expect(try server.http("v.localhost", "/.well-known/aasad-verify/" + String(repeating: "A", count: 65)).status == 404)
        #expect(try server.http("v.localhost", "/.well-known/aasad-verify/%41\(token.dropFirst())").status == 404)
        #expect(try server.http("v.localhost", "/.well-known/aasad-verify/../\(token)").status == 404)
        #expect(try server.http("v.localhost", path, ["-X", "DELETE"]).status == 405)
        let plain = try server.http("v.localhost", path)
        #expect(plain.status == 200)
        let answer = String(decoding: plain.body, as: UTF8.self)
        #expect(answer == (try Self.expected(config, name: "v.localhost", token: token)))
        #expect(answer != (try Self.expected(config, name: "w.localhost", token: token)))
        let secure = try server.https("v.localhost", path)
        #expect(secure.status == 200 && secure.body == plain.body)
        // The checker ran and failed, and says so in its own words.
        #expect(
            eventually(attempts: 100) {
                let check = (try? Self.json(Self.api(config, server.apiPort, "GET", "/v1/sites/v.localhost/verification"))) ?? [:]
                return (check["attempts"] as? Int ?? 0) >= 1 && check["lastError"] as? String == "no connection"
            })
        let sites = Self.json(try server.admin("/sites"))["sites"] as? [[String: Any]] ?? []
        #expect(sites.first { $0["directory"] as? String == "v.localhost" }?["verification"] as? String == "unverified", "\(sites)")
        // aasad sites, reading the directory: the waiting name, in text and JSON.
        let text = try Tool.run(AASAD.binary.path, ["sites", "--config", config.config]).text
        let line = text.split(separator: "\n").first { $0.hasPrefix("v.localhost\t") } ?? ""
        #expect(line.contains("\tunverified=v.localhost"), "\(text)")
        let listing = try Tool.run(AASAD.binary.path, ["sites", "--config", config.config, "--format", "json"]).stdout
        let entries = (try JSONSerialization.jsonObject(with: Data(listing)) as? [String: Any])?["sites"] as? [[String: Any]] ?? []
        #expect(entries.first { $0["directory"] as? String == "v.localhost" }?["unverified"] as? [String] == ["v.localhost"])
        // The key never leaves the server: not in the log, not in any API answer.
        let key = try Data(contentsOf: URL(fileURLWithPath: config.path("config/.aasad-verify/key")))
        #expect(!server.logSoFar().contains(key.base64EncodedString()))
    }

    @Test("the gate: no order for a name added over the API until it is verified, then one", .timeLimit(.minutes(3)))
    func gateWithPebble() throws {
        let (config, pebble, _) = try TestConfig.withPebble()
        // Four orders an hour: names nobody asked for may spend three (OrderBudget).
        try config.writeACMESettings(pebble, challenges: "http-01", extra: "  orders-per-hour: 4")
        // A hand-written site: ordered at once (the operator vouches for it). It shows that
        // orders run while the API's name waits.
        try FileManager.default.removeItem(atPath: config.path("config/sites"))
        try config.write("config/sites/a.test/apple-app-site-association", config.aasa)
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        let listeners = ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"]
        var server = try RunningServer(
            config: config, extra: listeners + (try Self.apiFlags(config, verifyPort: nobody.port)))
        try server.requireOwnListeners()
        let aasa = String(decoding: config.aasa, as: UTF8.self)
        #expect(try Self.api(config, server.apiPort, "PUT", "/v1/sites/v.localhost", body: #"{"aasa":\#(aasa)}"#).status == 201)
        #expect(ACMEServeTests.waitValid(server, ["a.test"]), "\(server.logSoFar())")
        #expect(
            eventually(attempts: 100) {
                let check = (try? Self.json(Self.api(config, server.apiPort, "GET", "/v1/sites/v.localhost/verification"))) ?? [:]
                return (check["attempts"] as? Int ?? 0) >= 1
            })
        // A flood of handshakes for the unverified name: the gate wins (it is not a wanted name,
        // so no handshake demands it).
        for _ in 0..<200 { #expect(HandBuiltClientHello.send(serverName: "v.localhost", port: server.httpsPort) > 0) }
        // Orders ran (a.test is valid) and the checker failed: no order names v.localhost.
        let orders = (try? String(contentsOfFile: config.path("acme/orders.log"), encoding: .utf8)) ?? ""
        #expect(orders.contains("a.test") && !orders.contains("v.localhost"), "\(orders)")
        #expect(try ACMEServeTests.automatic(server)["v.localhost"] == nil)
        #expect(!pebble.log().contains("v.localhost"))
        _ = server.stop()
        // Two more orders this hour (another replica's): with a.test's, the share of names nobody
        // asked for is spent. A name the API made and the check verified is asked for: its
        // owner is waiting, so it goes ahead, on the order kept for such names.
        let now = Int(Date().timeIntervalSince1970)
        let seeded = orders + "\(now) other1.example\n\(now) other2.example\n"
        try config.write("acme/orders.log", Array(seeded.utf8))
        // The checker now reaches this server's plain listener: verified, then ordered.
        server = try RunningServer(
            config: config, extra: listeners + (try Self.apiFlags(config, verifyPort: pebble.httpPort)))
        try server.requireOwnListeners()
        defer { _ = server.stop() }
        // A PUT of the site asks for its check at once (the failure before set it 30 s later).
        #expect(try Self.api(config, server.apiPort, "PUT", "/v1/sites/v.localhost", body: #"{"aasa":\#(aasa)}"#).status == 200)
        #expect(
            eventually(attempts: 300) {
                (try? Self.json(Self.api(config, server.apiPort, "GET", "/v1/sites/v.localhost/verification")))?["state"] as? String
                    == "verified"
            }, "\(server.logSoFar())")
        #expect(ACMEServeTests.waitValid(server, ["v.localhost"]), "\(server.logSoFar())\n\(pebble.log())")
    }
}
