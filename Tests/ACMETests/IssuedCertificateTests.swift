import Foundation
import TestSupport
import Testing

@testable import ACME

/// The checks on what a CA returns before it is stored, fed certificates the openssl command line
/// made as a broken or hostile CA would: another key, a missing name, an extra wildcard, a CA
/// certificate as leaf, validity at and past each bound.
@Suite("ACME issued certificate checks")
struct IssuedCertificateTests {
    let ca: OpenSSLCA
    let key: LeafKey
    let names = ["a.test", "b.test"]
    let url = try! ACMEURL("https://ca.test/cert/1")

    init() throws {
        ca = try OpenSSLCA()
        key = try LeafKey.generate()
    }

    /// A chain for this test's key and names, with `extensions` replacing the usual ones.
    func chain(extensions: String = "subjectAltName=DNS:a.test,DNS:b.test\n", csr: [UInt8]? = nil) throws -> CertificateChain {
        let csr = try csr ?? CertificateRequest(names: names, key: key).der
        return try CertificateChain(pem: ca.sign(csrDER: csr, extensions: extensions))
    }

    func check(_ chain: CertificateChain, now: Int64 = Int64(Date().timeIntervalSince1970)) throws(ACMEError) -> IssuedCertificate {
        try IssuedCertificate.checked(chain: chain, key: key, names: names, certificateURL: url, now: now)
    }

    /// The reason of a `.malformed` refusal, or nil when the chain was accepted or refused otherwise.
    func refusal(_ chain: CertificateChain, now: Int64 = Int64(Date().timeIntervalSince1970)) -> String? {
        do {
            _ = try check(chain, now: now)
            return nil
        } catch {
            guard case .malformed(let what, let reason) = error, what == "certificate" else { return "\(error)" }
            return reason
        }
    }

    @Test("a good chain is kept: the chain re-encoded, the key as PKCS#8 PEM matching the leaf, the names and dates")
    func good() throws {
        let chain = try chain()
        let issued = try check(chain)
        #expect(issued.chainPEM == chain.pem && issued.names == names && issued.certificateURL == url)
        #expect(issued.notAfter - issued.notBefore == 2 * 86_400)
        #expect(issued.keyPEM.starts(with: Array("-----BEGIN PRIVATE KEY-----\n".utf8)))
        let dir = try TemporaryDirectory(prefix: "acme-issued")
        try dir.write("chain.pem", issued.chainPEM)
        try dir.write("key.pem", issued.keyPEM)
        let leafKey = try OpenSSLCA.openssl(["x509", "-in", dir.path("chain.pem"), "-noout", "-pubkey"]).stdout
        let privateKey = try OpenSSLCA.openssl(["pkey", "-in", dir.path("key.pem"), "-pubout"]).stdout
        #expect(leafKey == privateKey && !leafKey.isEmpty)
    }

    @Test("a leaf for another key (the CA answered another client's CSR) is refused")
    func wrongKey() throws {
        let foreign = try chain(csr: ca.foreignCSR(names: names))
        #expect(refusal(foreign) == "the leaf's public key is not the key of the CSR")
    }

    @Test("a leaf missing a requested name, or with none in subjectAltName (common name only), is refused")
    func missingName() throws {
        #expect(refusal(try chain(extensions: "subjectAltName=DNS:a.test\n")) == "the leaf does not name b.test")
        #expect(refusal(try chain(extensions: "basicConstraints=CA:FALSE\n")) == "the leaf does not name a.test")
    }

    @Test("a leaf with a name nobody asked for, a wildcard above all, is refused")
    func extraNames() throws {
        #expect(
            refusal(try chain(extensions: "subjectAltName=DNS:a.test,DNS:b.test,DNS:*.a.test\n"))
                == "the leaf names *.a.test, which was not requested")
        #expect(
            refusal(try chain(extensions: "subjectAltName=DNS:a.test,DNS:evil.test,DNS:b.test\n"))
                == "the leaf names evil.test, which was not requested")
    }

    @Test("names are compared without regard to case, as DNS does")
    func caseInsensitive() throws {
        #expect(refusal(try chain(extensions: "subjectAltName=DNS:A.Test,DNS:B.TEST\n")) == nil)
    }

    @Test("a CA certificate as leaf is refused")
    func caLeaf() throws {
        #expect(
            refusal(try chain(extensions: "subjectAltName=DNS:a.test,DNS:b.test\nbasicConstraints=critical,CA:TRUE\n"))
                == "the leaf is a CA certificate")
    }

    @Test("validity: kept one second before notAfter, refused at it; kept an hour before notBefore, refused a second earlier")
    func validityBounds() throws {
        let chain = try chain()
        let issued = try check(chain)
        #expect(refusal(chain, now: issued.notAfter - 1) == nil)
        #expect(refusal(chain, now: issued.notAfter) == "it expired at \(issued.notAfter)")
        let earliest = issued.notBefore - IssuedCertificate.maximumNotBeforeSkewSeconds
        #expect(refusal(chain, now: earliest) == nil)
        #expect(refusal(chain, now: earliest - 1)?.hasPrefix("it is valid only from") == true)
    }

    @Test("garbage where the chain belongs never reaches the checks: CertificateChain refuses it")
    func garbage() throws {
        let good = try ca.sign(csrDER: CertificateRequest(names: names, key: key).der, extensions: "subjectAltName=DNS:a.test,DNS:b.test\n")
        let inputs: [[UInt8]] = [
            [], Array("garbage".utf8), Array("<html>rate limited</html>".utf8), Array(good.prefix(good.count / 2)),
            Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), good + Array("trailing text\n".utf8),
            Array("-----BEGIN PRIVATE KEY-----\n".utf8) + good,
        ]
        for (i, input) in inputs.enumerated() {
            #expect(throws: ACMEError.self, "case \(i)") { try CertificateChain(pem: input) }
        }
    }
}
