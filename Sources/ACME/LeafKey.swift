import CAASAOpenSSL
import TLS

/// A certificate's private key: EC P-256, made fresh for every order (a renewed certificate never
/// shares a key with the one it replaces, so a key that leaked with an old certificate is of no
/// use against the new one), and never the account key (RFC 8555 §11.1).
public final class LeafKey: @unchecked Sendable {
    /// The EVP_PKEY, owned. Read-only after creation, so safe to share between threads.
    let key: OpaquePointer

    private init(key: OpaquePointer) { self.key = key }

    deinit { EVP_PKEY_free(key) }

    /// A new random P-256 key.
    public static func generate() throws(ACMEError) -> LeafKey {
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else {
            throw .crypto("cannot make a P-256 key: \(TLSError.openSSLReasons())")
        }
        return LeafKey(key: key)
    }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the form the
    /// server's `tls/key.pem` loader and every TLS server read; stored 0600.
    public func pem() throws(ACMEError) -> [UInt8] {
        try pemText { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    /// The public key as SubjectPublicKeyInfo PEM (for tests and `openssl` checks).
    public func publicKeyPEM() throws(ACMEError) -> [UInt8] {
        try pemText { PEM_write_bio_PUBKEY($0, key) }
    }

    /// Whether `other` (an EVP_PKEY, a certificate's public key) is this key's public half.
    func isPublicKey(of other: OpaquePointer) -> Bool {
        // EVP_PKEY_eq compares the public components (and parameters) only.
        let equal = EVP_PKEY_eq(key, other) == 1
        ERR_clear_error()
        return equal
    }
}
