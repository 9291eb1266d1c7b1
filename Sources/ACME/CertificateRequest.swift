import CAASAOpenSSL
import TLS

/// The CSR sent to finalize an order (RFC 8555 §7.4, PKCS#10 / RFC 2986): every name of the order
/// in subjectAltName as dNSName entries (what the CA issues for; RFC 8555 §7.4 requires the CSR's
/// names to be exactly the order's identifiers), the first name also as the subject's common name
/// when it fits one (64 characters, RFC 5280's ub-common-name) for older tools that show the CN,
/// the leaf key's public half, signed by that key with SHA-256 (proof of possession).
public struct CertificateRequest: Sendable, Equatable {
    /// The DER bytes, base64url-encoded into the finalize payload.
    public let der: [UInt8]
    /// The names requested, normalised (`OrderNames`).
    public let names: [String]

    /// Longest common name (RFC 5280 Appendix A: ub-common-name INTEGER ::= 64).
    static let maximumCommonNameLength = 64

    public init(names: [String], key: LeafKey) throws(ACMEError) {
        let names = try OrderNames.normalized(names)
        guard let request = X509_REQ_new() else { throw .crypto("cannot allocate a CSR: \(TLSError.openSSLReasons())") }
        defer { X509_REQ_free(request) }
        // RFC 2986 §4.1: version 0 is the only version.
        guard X509_REQ_set_version(request, 0) == 1, X509_REQ_set_pubkey(request, key.key) == 1 else {
            throw .crypto("cannot fill the CSR: \(TLSError.openSSLReasons())")
        }
        if names[0].utf8.count <= Self.maximumCommonNameLength {
            guard X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(request), "CN", MBSTRING_ASC, names[0], -1, -1, 0) == 1 else {
                throw .crypto("cannot set the CSR's common name: \(TLSError.openSSLReasons())")
            }
        }
        // The names were checked by OrderNames (letters, digits, hyphens, dots, a leading "*."),
        // so the configuration syntax's separators (",", ":") cannot occur in them.
        let alternativeNames = names.map { "DNS:" + $0 }.joined(separator: ",")
        guard let san = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, alternativeNames) else {
            throw .crypto("cannot make the subjectAltName extension: \(TLSError.openSSLReasons())")
        }
        defer { X509_EXTENSION_free(san) }
        guard let extensions = OPENSSL_sk_new_null() else { throw .crypto("cannot allocate: \(TLSError.openSSLReasons())") }
        // The stack only borrows the extension (freed above); X509_REQ_add_extensions encodes it.
        defer { OPENSSL_sk_free(extensions) }
        guard OPENSSL_sk_push(extensions, UnsafeRawPointer(san)) > 0, X509_REQ_add_extensions(request, extensions) == 1 else {
            throw .crypto("cannot add the subjectAltName to the CSR: \(TLSError.openSSLReasons())")
        }
        guard X509_REQ_sign(request, key.key, EVP_sha256()) > 0 else {
            throw .crypto("cannot sign the CSR: \(TLSError.openSSLReasons())")
        }
        der = try derEncoding { i2d_X509_REQ(request, $0) }
        self.names = names
    }
}
