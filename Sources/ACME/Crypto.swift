import CAASAOpenSSL
import TLS

/// Runs a PEM writer into memory and returns the text, through the TLS module's writer (one copy
/// of it in the package), with its error in ACME's terms.
func pemText(_ writer: (OpaquePointer) -> Int32) throws(ACMEError) -> [UInt8] {
    do {
        return try DevelopmentCertificate.pem(writer)
    } catch {
        throw .crypto(error.reason)
    }
}

/// The DER encoding an OpenSSL `i2d_*` function writes, through its two-call protocol (length
/// first, then the bytes).
func derEncoding(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws(ACMEError) -> [UInt8] {
    let length = encode(nil)
    guard length > 0 else { throw .crypto("cannot encode DER: \(TLSError.openSSLReasons())") }
    var out = [UInt8](repeating: 0, count: Int(length))
    let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var p = buffer.baseAddress
        return encode(&p)
    }
    guard written == length else { throw .crypto("cannot encode DER: \(TLSError.openSSLReasons())") }
    return out
}

/// An X509 (owned by the caller, X509_free) decoded from DER, or nil; the whole input must be
/// one certificate.
func x509(der: [UInt8]) -> OpaquePointer? {
    der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
        var p = buffer.baseAddress
        guard let x = d2i_X509(nil, &p, buffer.count) else {
            ERR_clear_error()
            return nil
        }
        guard p == buffer.baseAddress.map({ $0 + buffer.count }) else {
            X509_free(x)
            return nil
        }
        return x
    }
}
