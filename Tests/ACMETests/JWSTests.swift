import Foundation
import Hashing
import SafeText
import StrictJSON
import TestSupport
import Testing

@testable import ACME

/// ES256 JWS over the account key, checked by the openssl command line as an independent
/// verifier, and the RFC 7638 thumbprint.
@Suite("ACME JWS and account key")
struct JWSTests {
    /// r || s back to the DER ECDSA-Sig-Value that `openssl dgst -verify` reads.
    static func der(fromRaw raw: [UInt8]) -> [UInt8] {
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var bytes = Array(half.drop { $0 == 0 })
            if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// Whether openssl verifies `signature` (as given, DER expected) over `message` with `key`.
    static func opensslVerifies(_ key: AccountKey, message: [UInt8], signature: [UInt8]) throws -> Bool {
        let dir = try TemporaryDirectory(prefix: "acme-jws")
        try dir.write("pub.pem", try key.publicKeyPEM())
        try dir.write("msg", message)
        try dir.write("sig", signature)
        let result = try Tool.run(
            "openssl", ["dgst", "-sha256", "-verify", dir.path("pub.pem"), "-signature", dir.path("sig"), dir.path("msg")])
        return result.status == 0 && result.text.contains("Verified OK")
    }

    @Test("an ES256 signature is the raw 64-byte r||s, which openssl verifies once put in DER, and not DER itself")
    func signature() throws {
        let key = try AccountKey.generate()
        let message = Array("eyJhbGciOiJFUzI1NiJ9.e30".utf8)
        for _ in 0..<4 {
            let raw = try key.sign(message)
            #expect(raw.count == 64)
            #expect(try Self.opensslVerifies(key, message: message, signature: Self.der(fromRaw: raw)))
            #expect(try !Self.opensslVerifies(key, message: message, signature: raw))
            #expect(try !Self.opensslVerifies(key, message: message + [0x20], signature: Self.der(fromRaw: raw)))
        }
    }

    @Test("a request JWS: flattened JSON, ES256 header with jwk or kid, nonce and url, signature over protected.payload")
    func request() throws {
        let key = try AccountKey.generate()
        let url = try ACMEURL("https://ca.test/new-order")
        let body = try JWS.request(key: key, signer: .jwk, url: url, nonce: "n0nce", payload: #"{"a":1}"#)
        let parts = try #require(JSONParser.parse(body).objectMembers)
        #expect(parts.map(\.key) == ["protected", "payload", "signature"])
        let protected = try #require(parts[0].value.stringValue)
        let payload = try #require(parts[1].value.stringValue)
        let signatureText = try #require(parts[2].value.stringValue)
        let signature = try #require(Base64URL.decode(signatureText))
        let header = String(decoding: try #require(Base64URL.decode(protected)), as: UTF8.self)
        #expect(header == #"{"alg":"ES256","jwk":\#(key.jwk),"nonce":"n0nce","url":"https://ca.test/new-order"}"#)
        #expect(Base64URL.decode(payload) == Array(#"{"a":1}"#.utf8))
        #expect(try Self.opensslVerifies(key, message: Array((protected + "." + payload).utf8), signature: Self.der(fromRaw: signature)))

        let account = try ACMEURL("https://ca.test/acct/1")
        let get = try JWS.request(key: key, signer: .kid(account), url: url, nonce: "n", payload: nil)
        let getParts = try #require(JSONParser.parse(get).objectMembers)
        #expect(getParts[1].value.stringValue == "")
        let getProtected = try #require(getParts[0].value.stringValue)
        let getHeader = String(decoding: Base64URL.decode(getProtected) ?? [], as: UTF8.self)
        #expect(getHeader == #"{"alg":"ES256","kid":"https://ca.test/acct/1","nonce":"n","url":"https://ca.test/new-order"}"#)
    }

    @Test("the RFC 7638 §3.1 example thumbprint, and the account key's JWK in canonical form")
    func thumbprint() throws {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        #expect(
            AccountKey.thumbprint(canonicalJWK: #"{"e":"AQAB","kty":"RSA","n":"\#(n)"}"#) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        let key = try AccountKey.generate()
        let members = try #require(JSONParser.parse(Array(key.jwk.utf8)).objectMembers)
        #expect(members.map(\.key) == ["crv", "kty", "x", "y"])
        #expect(members.compactMap(\.value.stringValue).map { $0.utf8.count } == [5, 2, 43, 43])
        #expect(!key.jwk.contains(" "))
        #expect(key.thumbprint == Base64URL.encode(Digest.sha256(key.jwk.utf8)))
        #expect(key.keyAuthorization(token: "tok") == "tok." + key.thumbprint)
    }

    @Test("the key survives PEM; RSA, P-384, encrypted and garbage keys are refused")
    func pem() throws {
        let key = try AccountKey.generate()
        let again = try AccountKey(pem: try key.pem())
        #expect(again.jwk == key.jwk)
        let dir = try TemporaryDirectory(prefix: "acme-key")
        let commands: [[String]] = [
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", dir.path("k")],
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", dir.path("k")],
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:x", "-out", dir.path("k")],
        ]
        for command in commands {
            #expect(try Tool.run("openssl", command).status == 0)
            let pem = [UInt8](try Data(contentsOf: dir.url.appendingPathComponent("k")))
            #expect(throws: ACMEError.self, "\(command)") { try AccountKey(pem: pem) }
        }
        #expect(throws: ACMEError.self) { try AccountKey(pem: Array("not a key".utf8)) }
    }

    @Test("External Account Binding: HS256 (RFC 4231 case 2), header with kid and url, payload the account's JWK")
    func externalAccountBinding() throws {
        #expect(
            try JWS.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
                == Base64URL.decode("W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM"))
        let key = try AccountKey.generate()
        let macKey = Array("0123456789abcdef0123456789abcdef".utf8)
        let url = try ACMEURL("https://ca.test/new-account")
        let eab = try JWS.externalAccountBinding(key: key, keyID: "kid-1", macKey: macKey, url: url)
        let parts = try #require(JSONParser.parse(Array(eab.utf8)).objectMembers)
        let protected = try #require(parts[0].value.stringValue)
        let payload = try #require(parts[1].value.stringValue)
        #expect(
            String(decoding: Base64URL.decode(protected) ?? [], as: UTF8.self)
                == #"{"alg":"HS256","kid":"kid-1","url":"https://ca.test/new-account"}"#)
        #expect(String(decoding: Base64URL.decode(payload) ?? [], as: UTF8.self) == key.jwk)
        let mac = try #require(parts[2].value.stringValue)
        #expect(try Base64URL.decode(mac) == JWS.hmacSHA256(key: macKey, Array((protected + "." + payload).utf8)))
        #expect(throws: ACMEError.self) { try JWS.externalAccountBinding(key: key, keyID: "k", macKey: [], url: url) }
    }
}
