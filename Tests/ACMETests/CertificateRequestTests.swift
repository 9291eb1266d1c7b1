import Foundation
import TestSupport
import Testing

@testable import ACME

/// The leaf key, the CSR and the order names, read back by the openssl command line.
@Suite("ACME leaf key, CSR and order names")
struct CertificateRequestTests {
    /// `openssl req -text -verify` over a DER CSR: its text, and whether the self-signature verified.
    static func opensslText(_ der: [UInt8]) throws -> (text: String, verified: Bool, publicKey: [UInt8]) {
        let dir = try TemporaryDirectory(prefix: "acme-csr")
        try dir.write("req.der", der)
        let text = try OpenSSLCA.openssl(["req", "-inform", "DER", "-in", dir.path("req.der"), "-noout", "-text", "-verify"])
        let key = try OpenSSLCA.openssl(["req", "-inform", "DER", "-in", dir.path("req.der"), "-noout", "-pubkey"])
        return (text.text, (text.text + text.stderr).contains("verify OK"), key.stdout)
    }

    @Test("a leaf key is a fresh P-256 key, written as unencrypted PKCS#8 PEM")
    func leafKey() throws {
        let key = try LeafKey.generate()
        let pem = try key.pem()
        #expect(pem.starts(with: Array("-----BEGIN PRIVATE KEY-----\n".utf8)))
        let text = try OpenSSLCA.openssl(["pkey", "-noout", "-text"], input: pem).text
        #expect(text.contains("ASN1 OID: prime256v1"))
        #expect(try LeafKey.generate().publicKeyPEM() != key.publicKeyPEM())
    }

    @Test("the CSR names every name in subjectAltName, the first as CN, holds the key, and is signed with ECDSA SHA-256")
    func contents() throws {
        let key = try LeafKey.generate()
        let csr = try CertificateRequest(names: ["A.test", "*.b.test", "xn--bcher-kva.test.", "a.test"], key: key)
        #expect(csr.names == ["a.test", "*.b.test", "xn--bcher-kva.test"])
        let (text, verified, publicKey) = try Self.opensslText(csr.der)
        #expect(verified, "\(text)")
        #expect(text.contains("DNS:a.test, DNS:*.b.test, DNS:xn--bcher-kva.test\n"))
        #expect(text.contains("Subject: CN = a.test\n"))
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256"))
        #expect(publicKey == (try key.publicKeyPEM()))
        // DER: a SEQUENCE whose length covers the whole input (nothing after it).
        #expect(csr.der.first == 0x30)
    }

    @Test("a first name longer than a common name may be (64) is in subjectAltName only; 64 still becomes the CN")
    func longCommonName() throws {
        let label = String(repeating: "a", count: 57)
        let at64 = label + ".b.test"
        let over = "a" + at64
        #expect(at64.utf8.count == CertificateRequest.maximumCommonNameLength)
        let (text64, _, _) = try Self.opensslText(try CertificateRequest(names: [at64], key: LeafKey.generate()).der)
        #expect(text64.contains("Subject: CN = \(at64)\n"))
        let (textOver, verified, _) = try Self.opensslText(try CertificateRequest(names: [over], key: LeafKey.generate()).der)
        #expect(verified && !textOver.contains("CN =") && textOver.contains("DNS:\(over)\n"))
    }

    @Test("order names: every malformed or hostile name is refused before anything is built or sent")
    func hostileNames() throws {
        let label63 = String(repeating: "a", count: 63)
        let name253 = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(name253.utf8.count == 253)
        #expect(try OrderNames.normalized([label63 + ".test", name253, name253 + "."]) == [label63 + ".test", name253])
        let refused = [
            "", ".", "a..test", ".a.test", "-a.test", "a-.test", "a_b.test", "a b.test", "a.test\u{0}", "bücher.test", "a/b.test",
            "a.test,DNS:evil.test", "a:b.test", "*.test", "a.*.test", "*a.test", "**.a.test", "*", "*.", label63 + "a.test",
            name253 + "c", "a.test..",
        ]
        for name in refused {
            #expect(throws: ACMEError.self, "\(name)") { try OrderNames.normalized([name]) }
            #expect(throws: ACMEError.self, "\(name)") { try CertificateRequest(names: [name], key: LeafKey.generate()) }
        }
    }

    @Test("an order holds 1 to maximumOrderNames names (duplicates counted once)")
    func nameCount() throws {
        let names = (1...ACMELimits.maximumOrderNames).map { "n\($0).test" }
        #expect(try OrderNames.normalized(names + ["N1.test"]).count == ACMELimits.maximumOrderNames)
        #expect {
            try OrderNames.normalized(names + ["one-more.test"])
        } throws: {
            guard case .request(let text) = $0 as? ACMEError else { return false }
            return text.contains("\(ACMELimits.maximumOrderNames + 1) names")
        }
        #expect(throws: ACMEError.request("an order needs at least one name")) { try OrderNames.normalized([]) }
    }
}
