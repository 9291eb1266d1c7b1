import Foundation
import SafeText
import TestSupport
import Testing

@testable import ACME

/// The challenge answers: the TLS-ALPN-01 certificate (RFC 8737 §3) read by `openssl x509` and
/// byte by byte, the dns-01 TXT value (RFC 8555 §8.4) against openssl's digest.
@Suite("ACME challenge answers")
struct ChallengeAnswerTests {
    static let keyAuthorization = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI"

    /// SHA-256 by the openssl command line, an implementation independent of the code under test.
    static func opensslSHA256(_ text: String) throws -> [UInt8] {
        try OpenSSLCA.openssl(["dgst", "-sha256", "-binary"], input: Array(text.utf8)).stdout
    }

    @Test("TLS-ALPN-01: self-signed, one dNSName, the critical acmeIdentifier extension, ECDSA P-256 with SHA-256, key matches")
    func certificateText() throws {
        let (chain, key) = try tlsALPN01Certificate(name: "A.Test", keyAuthorization: Self.keyAuthorization)
        #expect(chain.starts(with: Array("-----BEGIN CERTIFICATE-----\n".utf8)))
        #expect(key.starts(with: Array("-----BEGIN PRIVATE KEY-----\n".utf8)))
        let text = try OpenSSLCA.openssl(["x509", "-noout", "-text"], input: chain).text
        #expect(text.contains("X509v3 Subject Alternative Name: \n                DNS:a.test\n"), "\(text)")
        #expect(text.contains("1.3.6.1.5.5.7.1.31: critical"))
        #expect(text.contains("Signature Algorithm: ecdsa-with-SHA256") && text.contains("ASN1 OID: prime256v1"))
        #expect(text.contains("Issuer: CN = aasad ACME TLS-ALPN-01\n") && text.contains("Subject: CN = aasad ACME TLS-ALPN-01\n"))
        let certificateKey = try OpenSSLCA.openssl(["x509", "-noout", "-pubkey"], input: chain).stdout
        #expect(certificateKey == (try OpenSSLCA.openssl(["pkey", "-pubout"], input: key).stdout))
        // Short-lived: ends within validitySeconds, not within the next hour.
        let endsWithinDay = try Tool.run("openssl", ["x509", "-noout", "-checkend", String(TLSALPN01.validitySeconds + 60)], input: chain)
        let endsWithinHour = try Tool.run("openssl", ["x509", "-noout", "-checkend", "3600"], input: chain)
        #expect(endsWithinDay.status == 1 && endsWithinHour.status == 0)
    }

    @Test("TLS-ALPN-01: the DER holds the OID, critical TRUE, and extnValue 04 20 SHA-256(key authorization); one SAN entry")
    func certificateBytes() throws {
        let (chain, _) = try tlsALPN01Certificate(name: "a.test", keyAuthorization: Self.keyAuthorization)
        let der = try OpenSSLCA.openssl(["x509", "-outform", "DER"], input: chain).stdout
        let digest = try Self.opensslSHA256(Self.keyAuthorization)
        #expect(digest.count == 32)
        // Extension ::= SEQUENCE { extnID OID 1.3.6.1.5.5.7.1.31, critical BOOLEAN TRUE, extnValue OCTET STRING { OCTET STRING (32) } }
        let oid: [UInt8] = [0x06, 0x08, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1F]
        let expected = [0x30, 0x31] + oid + [0x01, 0x01, 0xFF, 0x04, 0x22, 0x04, 0x20] + digest
        #expect(Self.contains(der, expected))
        // subjectAltName (2.5.29.17) holds exactly one GeneralName: dNSName [2] "a.test".
        let san: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x11, 0x04, 0x0A, 0x30, 0x08, 0x82, 0x06] + Array("a.test".utf8)
        #expect(Self.contains(der, san))
    }

    @Test("TLS-ALPN-01: each certificate has its own key")
    func freshKeys() throws {
        let first = try tlsALPN01Certificate(name: "a.test", keyAuthorization: Self.keyAuthorization)
        let second = try tlsALPN01Certificate(name: "a.test", keyAuthorization: Self.keyAuthorization)
        #expect(first.keyPEM != second.keyPEM && first.chainPEM != second.chainPEM)
    }

    @Test("TLS-ALPN-01 refuses a wildcard, a name that is not a host name, and an empty or oversized key authorization")
    func certificateRefusals() throws {
        let bound = String(repeating: "k", count: TLSALPN01.maximumKeyAuthorizationLength)
        _ = try tlsALPN01Certificate(name: "a.test", keyAuthorization: bound)
        for (name, keyAuthorization) in [
            ("*.a.test", "k"), ("a.test,DNS:evil.test", "k"), ("a.test\nb", "k"), ("", "k"), ("a.test", ""), ("a.test", bound + "k"),
        ] {
            #expect(throws: ACMEError.self, "\(name) \(keyAuthorization.count)") {
                try tlsALPN01Certificate(name: name, keyAuthorization: keyAuthorization)
            }
        }
    }

    @Test("dns-01: the TXT value is base64url(SHA-256(key authorization)), 43 characters; the record and HTTP-01 path")
    func dns01() throws {
        let value = dns01TXTValue(keyAuthorization: Self.keyAuthorization)
        #expect(value == Base64URL.encode(try Self.opensslSHA256(Self.keyAuthorization)))
        #expect(value.utf8.count == 43 && Base64URL.isAlphabet(value.utf8))
        #expect(dns01RecordName("a.test") == "_acme-challenge.a.test")
        #expect(http01Path(token: "tok") == "/.well-known/acme-challenge/tok")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
