import CAASAOpenSSL

/// OpenSSL's queued error reasons as one line, emptying the queue (TLS keeps its own copy of this
/// helper internal; ACME does not depend on TLS).
func openSSLReasons() -> String {
    var reasons: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return reasons.isEmpty ? "unknown OpenSSL error" : reasons.joined(separator: "; ")
}

/// Runs a PEM writer into a memory BIO and returns the text.
func pemText(_ writer: (OpaquePointer) -> Int32) throws(ACMEError) -> [UInt8] {
    guard let bio = BIO_new(BIO_s_mem()) else { throw .crypto("cannot allocate: \(openSSLReasons())") }
    defer { BIO_free(bio) }
    guard writer(bio) == 1 else { throw .crypto("cannot write PEM: \(openSSLReasons())") }
    let length = Int(BIO_ctrl_pending(bio))
    var out = [UInt8](repeating: 0, count: length)
    guard let count = Int32(exactly: length), BIO_read(bio, &out, count) == count else { throw .crypto("cannot read PEM back") }
    return out
}

/// SHA-256 of `bytes`.
func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    let input = Array(bytes)
    var length: UInt32 = 0
    _ = input.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha256(), nil) }
    return digest
}
