package import Foundation
import Testing

/// A fake origin and a fake Apple CDN on one loopback TLS port (Fixtures/fake_origin_cdn.py),
/// with a test CA: the hosts `aasad check` and the CDN watch are tested against.
package final class FakeOriginCDN {
    package let directory: TemporaryDirectory
    package private(set) var port = 0
    private let process = Process()

    /// A valid AASA file for the app `ABCDE12345.com.example.app`, with a marker to tell versions.
    package static func aasa(_ version: Int) -> [UInt8] {
        Array(
            #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/v\#(version)/*"}]}]}}"#.utf8)
    }

    package init() throws {
        directory = try TemporaryDirectory(prefix: "aasad-fake-cdn")
        for folder in ["origin", "cdn", "dal", "certs/default", "certs/wrongname.test", "certs/expired.test"] {
            try FileManager.default.createDirectory(atPath: directory.path(folder), withIntermediateDirectories: true)
        }
        for (relative, bytes) in try Self.certificates.get() { try directory.write(relative, bytes) }
        let script = TestConfig.fixtures.appendingPathComponent("fake_origin_cdn.py").path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Port 0: the server binds a free port itself and prints it (no race with other tests
        // for a port chosen here and bound later).
        process.arguments = [Tool.python3, script, "0", directory.url.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while !line.contains(UInt8(ascii: "\n")) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += data
        }
        guard let bound = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.killAndWait()
            throw FakeServerError(description: "the fake origin did not start: \(String(decoding: line, as: UTF8.self))")
        }
        port = bound
    }

    package struct FakeServerError: Error, CustomStringConvertible {
        package var description: String
    }

    deinit {
        // SIGKILL: Python does not unblock SIGTERM in a child of a test thread.
        process.killAndWait()
    }

    /// Roots to trust: the test CA and the self-signed expired certificate (trusted, so that its
    /// dates are what fails).
    package var caFile: String { directory.path("trusted.pem") }
    /// The fake CDN's base URL (`--cdn`).
    package var cdn: String { "https://cdn.test:\(port)/a/v1/" }
    /// The same by address, for a client that cannot be given `--connect-to` (serve's watch).
    package var cdnByAddress: String { "https://127.0.0.1:\(port)/a/v1/" }
    /// The fake Digital Asset Links API (`--dal`).
    package var dal: String { "https://dal.test:\(port)/v1/statements:list" }
    /// Every connection goes to the fake server, whatever the host and port.
    package var connectTo: String { "::127.0.0.1:\(port)" }

    /// `aasad check` arguments that aim at this server.
    package func arguments(_ hosts: [String]) -> [String] {
        [
            "check", "--cacert", caFile, "--cdn", cdn, "--connect-to", connectTo, "--cdn-connect-to", connectTo, "--dal", dal,
            "--dal-connect-to", connectTo, "--timeout", "10",
        ] + hosts
    }

    package func origin(_ host: String, _ bytes: [UInt8]?) throws {
        if let bytes {
            try directory.write("origin/\(host)", bytes)
        } else {
            try? FileManager.default.removeItem(atPath: directory.path("origin/\(host)"))
        }
    }

    package func cdnCopy(_ host: String, _ bytes: [UInt8]?) throws {
        if let bytes {
            try directory.write("cdn/\(host)", bytes)
        } else {
            try? FileManager.default.removeItem(atPath: directory.path("cdn/\(host)"))
        }
    }

    package func cdnStatus(_ host: String, _ status: Int?) throws {
        let path = "cdn/\(host).status"
        if let status {
            try directory.write(path, Array("\(status)".utf8))
        } else {
            try? FileManager.default.removeItem(atPath: directory.path(path))
        }
    }

    /// The fake Digital Asset Links API's answer for `host`: `body` with `status`, after `sleep`
    /// seconds; nil body and status: the statements of the origin's assetlinks.json, as Google lists them.
    package func dalAnswer(_ host: String, _ body: [UInt8]?, status: Int? = nil, sleep: Double? = nil) throws {
        for (suffix, value) in [("", body), (".status", status.map { Array("\($0)".utf8) }), (".sleep", sleep.map { Array("\($0)".utf8) })]
        {
            if let value {
                try directory.write("dal/\(host)\(suffix)", value)
            } else {
                try? FileManager.default.removeItem(atPath: directory.path("dal/\(host)\(suffix)"))
            }
        }
    }

    /// The queries the fake API was asked, in order.
    package var dalRequests: [String] {
        (try? String(contentsOfFile: directory.path("dal-requests"), encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
    }

    /// The hosts the fake CDN was asked for, in order.
    package var cdnRequests: [String] {
        (try? String(contentsOfFile: directory.path("cdn-requests"), encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try Tool.run("openssl", arguments)
        #expect(result.status == 0, "openssl \(arguments[0]): \(result.stderr)")
    }

    /// The test CA, the leaves and the roots to trust, by path in the server's directory: made
    /// once per test process (nine openssl runs, most of a check test's CPU when each test made
    /// its own) and written into each server's directory.
    private static let certificates = Result { () throws -> [(String, [UInt8])] in
        let d = try TemporaryDirectory(prefix: "aasad-fake-cdn-certificates")
        try makeCertificates(in: d)
        let files =
            ["ca.pem", "ca.key", "trusted.pem"]
            + ["default", "wrongname.test", "expiring.test", "expired.test"].flatMap { folder in
                ["cert.pem", "key.pem"].map { "certs/\(folder)/\($0)" }
            }
        return try files.map { ($0, Array(try Data(contentsOf: URL(fileURLWithPath: d.path($0))))) }
    }

    private static func makeCertificates(in d: TemporaryDirectory) throws {
        let caFile = d.path("trusted.pem")
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=aasad check test CA",
            "-days", "3", "-keyout", d.path("ca.key"), "-out", d.path("ca.pem"),
        ])
        let everyHost = [
            "cdn.test", "dal.test", "good.test", "stale.test", "missing.test", "cdnerror.test", "reformatted.test", "redirect.test",
            "html.test",
            "invalid.test", "botblock.test", "notfound.test", "app.test", "expiring.test", "hostile.test", "127.0.0.1",
        ]
        try leaf(d, "certs/default", everyHost, days: 30)
        try leaf(d, "certs/wrongname.test", ["other.test"], days: 30)
        // Five days left: the expiry warning (14 days), not an error.
        try leaf(d, "certs/expiring.test", ["expiring.test"], days: 5)
        var certificates = try TestCertificates(root: d.url)
        try certificates.make(in: d.path("certs/expired.test"), names: ["expired.test"], start: "20200101000000Z", end: "20200201000000Z")
        let trusted =
            try Data(contentsOf: URL(fileURLWithPath: d.path("ca.pem")))
            + Data(contentsOf: URL(fileURLWithPath: d.path("certs/expired.test/cert.pem")))
        try trusted.write(to: URL(fileURLWithPath: caFile))
    }

    private static func leaf(_ d: TemporaryDirectory, _ folder: String, _ names: [String], days: Int) throws {
        try FileManager.default.createDirectory(atPath: d.path(folder), withIntermediateDirectories: true)
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(names[0])", "-keyout",
            d.path("\(folder)/key.pem"), "-out", d.path("\(folder)/leaf.csr"),
        ])
        let entries = names.map { name in name.allSatisfy { $0.isNumber || $0 == "." } ? "IP:\(name)" : "DNS:\(name)" }
        try d.write("\(folder)/ext.cnf", Array(("subjectAltName=" + entries.joined(separator: ",") + "\n").utf8))
        try openssl([
            "x509", "-req", "-in", d.path("\(folder)/leaf.csr"), "-CA", d.path("ca.pem"), "-CAkey", d.path("ca.key"), "-CAcreateserial",
            "-days", "\(days)", "-extfile", d.path("\(folder)/ext.cnf"), "-out", d.path("\(folder)/cert.pem"),
        ])
    }
}
