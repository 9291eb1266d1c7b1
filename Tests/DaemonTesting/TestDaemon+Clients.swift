package import Foundation
import TestSupport

/// A response as curl saw it.
package struct HTTPResult {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]
    package var connects: Int
    /// `1.1` or `2`, as curl reports it.
    package var version: String
}

/// Real clients against a `TestDaemon`: curl, raw sockets, openssl.
extension TestDaemon {
    /// curl over HTTPS with `host` resolved to the daemon, trusting the development CA (or `cacert`).
    package func https(_ host: String, _ path: String, _ options: [String] = [], cacert: String? = nil) throws -> HTTPResult {
        try curl(
            [
                "--cacert", cacert ?? config.developmentCA, "--resolve", "\(host):\(httpsPort):127.0.0.1",
                "https://\(host):\(httpsPort)\(path)",
            ] + options)
    }

    /// curl to the admin listener.
    package func admin(_ path: String) throws -> HTTPResult { try curl(["http://127.0.0.1:\(adminPort)\(path)"]) }

    /// curl over plain HTTP with a Host header.
    package func http(_ host: String, _ path: String, _ options: [String] = []) throws -> HTTPResult {
        try curl(["-H", "Host: \(host)", "http://127.0.0.1:\(httpPort)\(path)"] + options)
    }

    /// curl with `arguments` (10 s at most), its response head written to a scratch file in the
    /// test's directory; with several responses, the last one's head counts.
    package func curl(_ arguments: [String]) throws -> HTTPResult {
        let headerFile = config.path("headers-\(UUID().uuidString)")
        let out = try Tool.run(
            "curl", ["-sS", "--path-as-is", "-D", headerFile, "-w", "\n%{num_connects} %{http_version}", "--max-time", "10"] + arguments)
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        var body = out.stdout
        var connects = 0
        var version = ""
        if let newline = body.lastIndex(of: 10) {
            let trailer = String(decoding: body[(newline + 1)...], as: UTF8.self).split(separator: " ")
            connects = Int(trailer.first ?? "") ?? 0
            version = String(trailer.last ?? "")
            body = Array(body[..<newline])
        }
        let head = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        let blocks = head.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
        let lines = (blocks.last ?? "").components(separatedBy: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if out.status != 0 && status == 0 { throw Failure("curl failed (\(out.status)): \(out.stderr)") }
        return HTTPResult(status: status, headers: headers, body: body, connects: connects, version: version)
    }

    /// Sends raw bytes on a plain TCP connection (the plain listener unless `port`) and returns
    /// everything received until the daemon closes or `timeout` seconds pass.
    package func raw(_ bytes: [UInt8], timeout: Double = 5, port: Int? = nil) -> [UInt8] {
        guard let fd = Loopback.connect(port: port ?? httpPort) else { return [] }
        defer { close(fd) }
        Loopback.setReceiveTimeout(fd, seconds: Int(timeout))
        if !bytes.isEmpty { Loopback.send(fd, bytes) }
        return Loopback.receiveAll(fd)
    }

    /// The SHA-256 fingerprint line of the certificate a new connection with this SNI name gets.
    package func servedFingerprint(_ name: String) throws -> String {
        let handshake = try Tool.run("openssl", ["s_client", "-connect", "127.0.0.1:\(httpsPort)", "-servername", name], input: [])
        return try Tool.run("openssl", ["x509", "-noout", "-fingerprint", "-sha256"], input: handshake.stdout).text
    }
}
