import CAASAOpenSSL

/// SHA-256 in one call, through libcrypto: the one place the package hashes bytes. SiteStore's
/// strong ETags and certificate identities, ACME's JWK thumbprints and challenge answers, the
/// CDN watch's digests of Apple's copies and TLS's session binding all come from here.
package enum Digest {
    /// Bytes in a SHA-256 digest (FIPS 180-4 §6.2).
    package static let sha256Length = 32

    /// SHA-256 of `bytes`: contiguous bytes (an array, a native string's UTF-8) are hashed where
    /// they are, others copied once.
    package static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ sha256(UnsafeRawBufferPointer($0)) }) { return digest }
        return Array(bytes).withUnsafeBytes { sha256($0) }
    }

    private static func sha256(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        var length: UInt32 = 0
        let ok = EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        // EVP_Digest fails only when libcrypto cannot allocate its context; nothing sensible can
        // be served or signed then.
        precondition(ok == 1 && length == sha256Length, "SHA-256 failed")
        return out
    }
}
