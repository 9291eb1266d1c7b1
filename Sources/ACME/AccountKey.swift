import CAASAOpenSSL
import Hashing
import SafeText
import TLS

/// The ACME account key: EC P-256, signing ES256 (RFC 7518 §3.4) through OpenSSL's EVP API. Made
/// once and kept in the storage directory as PKCS#8 PEM; the account is this key (RFC 8555 §7.3.1:
/// newAccount with the same key finds the same account).
public final class AccountKey: @unchecked Sendable {
    /// The EVP_PKEY, owned; OpenSSL's key objects are safe to use from several threads for signing.
    private let key: OpaquePointer
    /// The public key as a JWK (RFC 7517) with its members in RFC 7638 §3.3's order, which is
    /// also the thumbprint's input: `{"crv":"P-256","kty":"EC","x":"…","y":"…"}`.
    public let jwk: String

    /// Length of each of r and s, and of each coordinate, for P-256 (RFC 7518 §3.4, §6.2.1.2).
    static let coordinateLength = 32

    private init(key: OpaquePointer) throws(ACMEError) {
        self.key = key
        var x = [UInt8](repeating: 0, count: Self.coordinateLength)
        var y = [UInt8](repeating: 0, count: Self.coordinateLength)
        var bx: OpaquePointer? = nil
        var by: OpaquePointer? = nil
        defer {
            BN_free(bx)
            BN_free(by)
        }
        guard EVP_PKEY_get_bn_param(key, "qx", &bx) == 1, EVP_PKEY_get_bn_param(key, "qy", &by) == 1,
            BN_bn2binpad(bx, &x, Int32(Self.coordinateLength)) == Int32(Self.coordinateLength),
            BN_bn2binpad(by, &y, Int32(Self.coordinateLength)) == Int32(Self.coordinateLength)
        else {
            EVP_PKEY_free(key)
            throw .crypto("cannot read the account key's public point: \(TLSError.openSSLReasons())")
        }
        jwk = #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(x))","y":"\#(Base64URL.encode(y))"}"#
    }

    deinit { EVP_PKEY_free(key) }

    /// A new random P-256 key.
    public static func generate() throws(ACMEError) -> AccountKey {
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else { throw .crypto("cannot make a P-256 key: \(TLSError.openSSLReasons())") }
        return try AccountKey(key: key)
    }

    /// A key read back from PEM (PKCS#8 or SEC1); anything but an unencrypted P-256 key is refused.
    public convenience init(pem: [UInt8]) throws(ACMEError) {
        ERR_clear_error()
        guard let length = Int32(exactly: pem.count), let bio = BIO_new_mem_buf(pem, length) else {
            throw .crypto("the account key file is too large")
        }
        defer { BIO_free(bio) }
        // A nil password callback with an empty passphrase: an encrypted key fails instead of
        // asking on the terminal.
        guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
            throw .crypto("the account key is not an unencrypted PEM private key: \(TLSError.openSSLReasons())")
        }
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
            EVP_PKEY_get_utf8_string_param(key, "group", &group, group.count, &groupLength) == 1,
            String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            throw .crypto("the account key is not an EC P-256 key (ES256 needs one)")
        }
        try self.init(key: key)
    }

    /// The private key as PKCS#8 PEM, for the storage directory (written 0600).
    public func pem() throws(ACMEError) -> [UInt8] {
        try pemText { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    /// The public key as SubjectPublicKeyInfo PEM (for tests and `openssl` checks).
    public func publicKeyPEM() throws(ACMEError) -> [UInt8] {
        try pemText { PEM_write_bio_PUBKEY($0, key) }
    }

    /// RFC 7638: base64url of the SHA-256 of the canonical JWK.
    public var thumbprint: String { Self.thumbprint(canonicalJWK: jwk) }

    /// The thumbprint of a JWK already in RFC 7638 §3.3's form (required members only, sorted,
    /// no white space).
    public static func thumbprint(canonicalJWK: String) -> String { Base64URL.encode(Digest.sha256(canonicalJWK.utf8)) }

    /// RFC 8555 §8.1: `token || '.' || base64url(Thumbprint(accountKey))`.
    public func keyAuthorization(token: String) -> String { token + "." + thumbprint }

    /// ES256 over `message`: the raw 64-byte r || s of RFC 7518 §3.4, not OpenSSL's DER
    /// ECDSA-Sig-Value (a JWS verifier rejects DER).
    public func sign(_ message: [UInt8]) throws(ACMEError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw .crypto("cannot allocate: \(TLSError.openSSLReasons())") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { throw .crypto("sign init: \(TLSError.openSSLReasons())") }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1 else { throw .crypto("sign: \(TLSError.openSSLReasons())") }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &der, &length, message, message.count) == 1 else { throw .crypto("sign: \(TLSError.openSSLReasons())") }
        return try Self.rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs) to r || s, each left-padded to 32 bytes.
    static func rawSignature(fromDER der: [UInt8]) throws(ACMEError) -> [UInt8] {
        var p: UnsafePointer<UInt8>? = nil
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            p = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buffer.count)
        }
        guard let sig else { throw .crypto("OpenSSL's signature is not DER: \(TLSError.openSSLReasons())") }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer? = nil
        var s: OpaquePointer? = nil
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 2 * coordinateLength)
        let n = Int32(coordinateLength)
        let ok = out.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(r, buffer.baseAddress, n) == n && BN_bn2binpad(s, buffer.baseAddress! + coordinateLength, n) == n
        }
        guard ok else { throw .crypto("a signature half is longer than 32 bytes") }
        return out
    }
}
