import ACME
import Foundation
import TestSupport

/// A certificate authority made by the openssl command line, an issuer independent of the code
/// under test: it signs CSRs with whatever extensions a test chooses, so a test can make the
/// certificates a broken or hostile CA would return.
final class OpenSSLCA {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "acme-openssl-ca")
        try Self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=aasad test issuer",
            "-days", "3", "-keyout", directory.path("ca.key"), "-out", directory.path("ca.pem"),
        ])
    }

    /// The issuer's certificate, PEM.
    var certificatePEM: [UInt8] { get throws { [UInt8](try Data(contentsOf: directory.url.appendingPathComponent("ca.pem"))) } }

    /// Signs a DER CSR with `extensions` (openssl's extension file syntax), valid for `days`;
    /// the chain as a CA sends it: leaf PEM, then the issuer's.
    func sign(csrDER: [UInt8], extensions: String, days: Int = 2) throws -> [UInt8] {
        try directory.write("req.der", csrDER)
        try directory.write("ext.cnf", Array(extensions.utf8))
        try Self.openssl(["req", "-inform", "DER", "-in", directory.path("req.der"), "-out", directory.path("req.pem")])
        try Self.openssl([
            "x509", "-req", "-in", directory.path("req.pem"), "-CA", directory.path("ca.pem"), "-CAkey", directory.path("ca.key"),
            "-set_serial", "7", "-days", String(days), "-extfile", directory.path("ext.cnf"), "-out", directory.path("leaf.pem"),
        ])
        return [UInt8](try Data(contentsOf: directory.url.appendingPathComponent("leaf.pem"))) + (try certificatePEM)
    }

    /// A CSR for `names` over a key the code under test never saw (what a CA answering another
    /// client's order would have signed).
    func foreignCSR(names: [String]) throws -> [UInt8] {
        try Self.openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(names[0])",
            "-addext", "subjectAltName=" + names.map { "DNS:" + $0 }.joined(separator: ","), "-keyout", directory.path("other.key"),
            "-outform", "DER", "-out", directory.path("other.der"),
        ])
        return [UInt8](try Data(contentsOf: directory.url.appendingPathComponent("other.der")))
    }

    /// Runs openssl; its output, or an error with its complaint.
    @discardableResult
    static func openssl(_ arguments: [String], input: [UInt8]? = nil) throws -> Tool.Output {
        let result = try Tool.run("openssl", arguments, input: input)
        guard result.status == 0 else { throw ACMEError.crypto("openssl \(arguments.prefix(2).joined(separator: " ")): \(result.stderr)") }
        return result
    }
}
