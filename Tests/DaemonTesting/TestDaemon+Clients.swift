import Foundation
package import TestSupport

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

    /// curl with `arguments` (`Curl.run`), its scratch files in the test's directory.
    package func curl(_ arguments: [String]) throws -> HTTPResult { try Curl.run(arguments, scratch: config.directory.path) }

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

extension TestDaemon: AdminPages {}
