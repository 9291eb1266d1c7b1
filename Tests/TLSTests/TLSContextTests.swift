import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TLS

@Suite("TLS contexts from PEM")
struct TLSContextTests {
    @Test("a key that does not match its certificate is refused, repeatedly, without a crash (regression: double free)")
    func mismatchedKey() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let a = try DevelopmentCertificate.issue(directory: scratch.path("a"), hosts: ["a.test"])
        let b = try DevelopmentCertificate.issue(directory: scratch.path("b"), hosts: ["b.test"])
        for _ in 0..<20 {
            do {
                _ = try TLSContext(chainPEM: a.chainPEM, keyPEM: b.keyPEM, identity: "x", source: "test")
                Issue.record("a mismatched pair was accepted")
            } catch {
                #expect(error.reason.contains("does not match"))
                #expect(error.file == "test/key.pem")
            }
        }
        _ = try TLSContext(chainPEM: a.chainPEM, keyPEM: a.keyPEM, identity: "a", source: "test")
    }

    /// The key is decoded as the certificate's key type first (fast), else the generic way: every
    /// key form openssl writes must load by one or the other, and a key of another type than the
    /// certificate's must still be refused as not matching.
    @Test(
        "keys in every form openssl writes load with their certificate; a key of another type is refused",
        arguments: [
            ("ec-sec1", ["ecparam", "-name", "prime256v1", "-genkey", "-noout"], [String]()),
            ("ec-pkcs8", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], []),
            ("rsa-pkcs8", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], []),
            ("rsa-pkcs1", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], ["rsa", "-traditional"]),
            ("ed25519", ["genpkey", "-algorithm", "ED25519"], []),
        ])
    func keyForms(_ name: String, _ generate: [String], _ convert: [String]) throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-keys")
        let key = scratch.path("\(name).key")
        #expect(try Tool.run("openssl", generate + ["-out", key]).status == 0)
        if !convert.isEmpty {
            #expect(try Tool.run("openssl", convert + ["-in", key, "-out", key + ".2"]).status == 0)
            try FileManager.default.removeItem(atPath: key)
            try FileManager.default.moveItem(atPath: key + ".2", toPath: key)
        }
        let certificate = scratch.path("\(name).pem")
        let made = try Tool.run(
            "openssl", ["req", "-new", "-x509", "-key", key, "-subj", "/CN=a.test", "-days", "30", "-out", certificate])
        #expect(made.status == 0, "\(made.stderr)")
        let chainPEM = try [UInt8](Data(contentsOf: URL(fileURLWithPath: certificate)))
        let keyPEM = try [UInt8](Data(contentsOf: URL(fileURLWithPath: key)))
        _ = try TLSContext(chainPEM: chainPEM, keyPEM: keyPEM, identity: name, source: "test")
        // Another type's key with this certificate.
        let other = scratch.path("other.key")
        let otherType =
            name.hasPrefix("ec") ? ["genpkey", "-algorithm", "ED25519"] : ["ecparam", "-name", "prime256v1", "-genkey", "-noout"]
        #expect(try Tool.run("openssl", otherType + ["-out", other]).status == 0)
        let otherPEM = try [UInt8](Data(contentsOf: URL(fileURLWithPath: other)))
        do {
            _ = try TLSContext(chainPEM: chainPEM, keyPEM: otherPEM, identity: "x", source: "test")
            Issue.record("a key of another type was accepted")
        } catch {
            #expect(error.reason.contains("does not match"), "\(error.reason)")
        }
    }

    @Test("text that is not PEM is refused with the file named", arguments: [("not a certificate", "cert.pem"), ("", "cert.pem")])
    func notPEM(_ text: String, _ file: String) {
        do {
            _ = try TLSContext(chainPEM: Array(text.utf8), keyPEM: [], identity: "x", source: "s")
            Issue.record("accepted")
        } catch {
            #expect(error.file == "s/\(file)")
        }
    }
}

extension TLSContextTests {
    /// A maker that fails while `failing` and counts its calls.
    final class Maker: Sendable {
        let state = Mutex((failing: true, calls: 0))
        func make() -> OpaquePointer? {
            state.withLock { state in
                state.calls += 1
                return state.failing ? nil : OpaquePointer(bitPattern: 0x10)
            }
        }
    }

    @Test("the context the checks share is made again after a failure to make it (ENOMEM), and kept once made")
    func checkingContextRetried() {
        let maker = Maker()
        let made = RetriedUntilMade { maker.make() }
        #expect(made.get() == nil)
        #expect(made.get() == nil)
        maker.state.withLock { $0.failing = false }
        #expect(made.get() == OpaquePointer(bitPattern: 0x10), "a failure to make it was kept")
        #expect(made.get() == OpaquePointer(bitPattern: 0x10))
        #expect(maker.state.withLock { $0.calls } == 3, "made again once made")
    }
}
