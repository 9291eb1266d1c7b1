import Foundation
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
