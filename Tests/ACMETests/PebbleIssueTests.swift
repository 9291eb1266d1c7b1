import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// Answers challenges through pebble-challtestsrv's management API, as the server's storage
/// directory and DNS hook will: HTTP-01 key authorizations served by challtestsrv on pebble's
/// httpPort, dns-01 TXT records in challtestsrv's DNS (pebble's resolver). Records its calls.
final class ChallengeTestServerSolver: ChallengeSolver {
    let types: [String]
    let managementPort: Int
    let calls = Mutex<[String]>([])

    init(types: [String], managementPort: Int) {
        self.types = types
        self.managementPort = managementPort
    }

    func present(type: String, name: String, token: String, keyAuthorization: String) throws(ACMEError) {
        calls.withLock { $0.append("present \(type) \(name)") }
        switch type {
        case ChallengeType.http01:
            try call("add-http01", #"{"token":"\#(token)","content":"\#(keyAuthorization)"}"#)
        case ChallengeType.dns01:
            try call("set-txt", #"{"host":"\#(dns01RecordName(name)).","value":"\#(dns01TXTValue(keyAuthorization: keyAuthorization))"}"#)
        default:
            throw .storage("this solver does not answer \(type)")
        }
    }

    func cleanUp(type: String, name: String, token: String) {
        calls.withLock { $0.append("cleanUp \(type) \(name)") }
        switch type {
        case ChallengeType.http01: try? call("del-http01", #"{"token":"\#(token)"}"#)
        case ChallengeType.dns01: try? call("clear-txt", #"{"host":"\#(dns01RecordName(name))."}"#)
        default: break
        }
    }

    private func call(_ path: String, _ json: String) throws(ACMEError) {
        do {
            let result = try Tool.run("curl", ["-sS", "--fail", "-X", "POST", "-d", json, "http://127.0.0.1:\(managementPort)/\(path)"])
            guard result.status == 0 else { throw ACMEError.storage("challtestsrv /\(path): \(result.stderr)") }
        } catch let error as ACMEError {
            throw error
        } catch {
            throw .storage("curl: \(error)")
        }
    }

    var recorded: [String] { calls.withLock { $0 } }
}

/// Answers TLS-ALPN-01 with the library's own challenge certificate, served by `openssl s_server`
/// with ALPN `acme-tls/1` on pebble's tlsPort: pebble's VA then judges the certificate itself.
/// Unchecked Sendable: the temporary directory is only read after init, the process is behind
/// the mutex.
final class OpenSSLServerSolver: ChallengeSolver, @unchecked Sendable {
    let types = [ChallengeType.tlsALPN01]
    let port: Int
    let directory: TemporaryDirectory
    private let server = Mutex<Process?>(nil)

    init(port: Int) throws {
        self.port = port
        directory = try TemporaryDirectory(prefix: "acme-tls-alpn")
    }

    func present(type: String, name: String, token: String, keyAuthorization: String) throws(ACMEError) {
        let (chain, key) = try tlsALPN01Certificate(name: name, keyAuthorization: keyAuthorization)
        let port = port
        let process = Process()
        do {
            try directory.write("chain.pem", chain)
            try directory.write("key.pem", key)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", directory.path("chain.pem"), "-key",
                directory.path("key.pem"),
                "-alpn", ChallengeType.tlsALPNProtocol, "-www", "-quiet",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            server.withLock { $0 = process }
        } catch {
            throw .storage("openssl s_server: \(error)")
        }
        // s_server itself, not another test's server on pebble's tlsPort (a connect would pass).
        guard Loopback.listens(process, on: [port]) else {
            throw .storage("openssl s_server did not listen on \(port), or another process holds it")
        }
    }

    func cleanUp(type: String, name: String, token: String) {
        guard let process = server.withLock({ $0.take() }) else { return }
        process.killAndWait()
    }
}

/// The whole issuance against a real ACME server: pebble with its default 5 % bad-nonce
/// rejections, validating over real HTTP, DNS and TLS on loopback through pebble-challtestsrv
/// and openssl s_server; the chain verified by `openssl verify` against pebble's own root.
@Suite("ACME issuance against pebble", .serialized)
struct PebbleIssueTests {
    /// `openssl verify` of an issued chain against pebble's issuing root, and the leaf's names.
    static func verify(_ issued: IssuedCertificate, pebble: Pebble) throws -> (verified: Bool, output: String) {
        let dir = try TemporaryDirectory(prefix: "acme-verify")
        let chain = try CertificateChain(pem: issued.chainPEM)
        #expect(chain.certificates.count >= 2, "pebble sends the leaf and its intermediate")
        try dir.write("root.pem", try pebble.issuingRoot())
        try dir.write("leaf.pem", CertificateChain.encode(chain.certificates[0]))
        try dir.write("intermediates.pem", chain.certificates.dropFirst().flatMap { CertificateChain.encode($0) })
        let result = try Tool.run(
            "openssl",
            [
                "verify", "-CAfile", dir.path("root.pem"), "-untrusted", dir.path("intermediates.pem"), "-purpose", "sslserver",
                dir.path("leaf.pem"),
            ])
        return (result.status == 0, result.text + result.stderr)
    }

    @Test("HTTP-01: issue() returns a chain that openssl verifies against pebble's root, for both names, with the key")
    func http01() throws {
        let pebble = try Pebble(answerChallenges: true)
        let client = try pebble.client()
        try client.account()
        let solver = ChallengeTestServerSolver(types: [ChallengeType.http01], managementPort: pebble.challengeManagementPort)
        let issued = try client.issue(names: ["www.issue.example.test", "issue.example.test"], solver: solver)
        #expect(issued.names == ["www.issue.example.test", "issue.example.test"])
        #expect(issued.notAfter > Int64(Date().timeIntervalSince1970) && issued.notBefore < issued.notAfter)
        let (verified, output) = try Self.verify(issued, pebble: pebble)
        #expect(verified, "\(output)")
        let text = try OpenSSLCA.openssl(["x509", "-noout", "-ext", "subjectAltName"], input: issued.chainPEM).text
        #expect(text.contains("DNS:www.issue.example.test") && text.contains("DNS:issue.example.test"))
        let leafKey = try OpenSSLCA.openssl(["x509", "-noout", "-pubkey"], input: issued.chainPEM).stdout
        #expect(leafKey == (try OpenSSLCA.openssl(["pkey", "-pubout"], input: issued.keyPEM).stdout))
        #expect(
            Set(solver.recorded) == [
                "present http-01 www.issue.example.test", "present http-01 issue.example.test",
                "cleanUp http-01 www.issue.example.test", "cleanUp http-01 issue.example.test",
            ])
        #expect(issued.certificateURL.text.hasPrefix("https://127.0.0.1:\(pebble.port)/"))
    }

    @Test("DNS-01 for a wildcard (HTTP-01 preferred for the base name): issued for both, verified against pebble's root")
    func dns01Wildcard() throws {
        let pebble = try Pebble(answerChallenges: true)
        let client = try pebble.client()
        try client.account()
        let solver = ChallengeTestServerSolver(
            types: [ChallengeType.http01, ChallengeType.dns01], managementPort: pebble.challengeManagementPort)
        let issued = try client.issue(names: ["*.wild.example.test", "wild.example.test"], solver: solver)
        let (verified, output) = try Self.verify(issued, pebble: pebble)
        #expect(verified, "\(output)")
        let text = try OpenSSLCA.openssl(["x509", "-noout", "-ext", "subjectAltName"], input: issued.chainPEM).text
        #expect(text.contains("DNS:*.wild.example.test") && text.contains("DNS:wild.example.test"))
        #expect(
            Set(solver.recorded.filter { $0.hasPrefix("present") }) == [
                "present dns-01 wild.example.test", "present http-01 wild.example.test",
            ])
        #expect(solver.recorded.filter { $0.hasPrefix("cleanUp") }.count == 2)
    }

    @Test("TLS-ALPN-01: pebble's VA accepts the library's challenge certificate over a real acme-tls/1 handshake")
    func tlsALPN01() throws {
        let pebble = try Pebble(resolveEverythingToLoopback: true)
        let client = try pebble.client()
        try client.account()
        let issued = try client.issue(names: ["alpn.example.test"], solver: OpenSSLServerSolver(port: pebble.tlsPort))
        let (verified, output) = try Self.verify(issued, pebble: pebble)
        #expect(verified, "\(output)")
    }

    @Test("a challenge pebble cannot validate (nothing presented for real) fails with pebble's problem, and is cleaned up")
    func failedValidation() throws {
        let pebble = try Pebble(answerChallenges: true)
        let client = try pebble.client()
        try client.account()
        let solver = RecordingSolver(types: [ChallengeType.http01])
        #expect {
            try client.issue(names: ["fail.example.test"], solver: solver)
        } throws: {
            guard case .invalid(let what, let problem) = $0 as? ACMEError, let problem else { return false }
            return what.contains("fail.example.test (http-01") && problem.acmeType == "unauthorized" && !problem.detail.isEmpty
        }
        #expect(solver.recorded.last?.hasPrefix("cleanUp http-01 fail.example.test") == true)
    }
}
