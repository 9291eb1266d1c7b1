import CAASAOpenSSL
import Glibc

/// What `aasad validate` and the development CA need to know of a certificate: its validity
/// period and the DNS names it is for (RFC 5280 §4.1.2.5, §4.2.1.6).
public struct CertificateInfo: Sendable, Equatable {
    /// Start of the validity period, seconds since the epoch.
    public var notBefore: Int64
    /// End of the validity period, seconds since the epoch.
    public var notAfter: Int64
    /// The subjectAltName's dNSName entries, lower-case. Clients (Apple's among them) match host
    /// names against these only, never against the subject's common name when any is present
    /// (RFC 6125 §6.4.4); aasad ignores the common name altogether.
    public var dnsNames: [String]
    /// The issuer's name in OpenSSL's one-line form (`/C=US/O=Let's Encrypt/CN=R11`), as the
    /// status page shows it; at most `maximumIssuerLength` bytes, empty when unreadable.
    public var issuer: String = ""

    /// Longest issuer name kept: a CA's name is a few dozen bytes; a longer one is cut.
    public static let maximumIssuerLength = 256

    public init(notBefore: Int64, notAfter: Int64, dnsNames: [String]) {
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.dnsNames = dnsNames
    }

    /// The first certificate of a PEM chain (the leaf, which names the server).
    public init(leafPEM pem: [UInt8]) throws(TLSError) {
        guard pem.count <= Int(Int32.max) else { throw TLSError("the certificate file is too large") }
        let parsed = pem.withUnsafeBytes { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let x509 = parsed else { throw TLSError("no PEM certificate in the file: \(TLSError.openSSLReasons())") }
        defer { X509_free(x509) }
        try self.init(x509: x509)
    }

    init(x509: OpaquePointer) throws(TLSError) {
        guard let start = Self.seconds(X509_get0_notBefore(x509)), let end = Self.seconds(X509_get0_notAfter(x509)) else {
            throw TLSError("the certificate's validity period cannot be read: \(TLSError.openSSLReasons())")
        }
        notBefore = start
        notAfter = end
        dnsNames = CertificateNames.of(x509).dnsNames
        var buffer = [CChar](repeating: 0, count: Self.maximumIssuerLength + 1)
        // X509_NAME_oneline writes at most the buffer's size, NUL included, and escapes
        // non-printable bytes as \xHH.
        if let name = X509_get_issuer_name(x509), X509_NAME_oneline(name, &buffer, Int32(buffer.count)) != nil {
            issuer = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// An ASN1_TIME as seconds since the epoch.
    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    /// Whether the certificate is for `host` (an A-label name, or a wildcard site's `*.suffix`).
    public func covers(_ host: String) -> Bool {
        dnsNames.contains { Self.matches(presented: $0, host: host) }
    }

    /// Whether a certificate name covers `host`, by `CertificateNames`' rule (the 421 rule's),
    /// names compared case-insensitively without a trailing dot. A wildcard site (`*.example.com`)
    /// serves every name under its suffix, so only the same usable wildcard covers it.
    public static func matches(presented: String, host: String) -> Bool {
        let presented = Array(CertificateNames.lowercased(presented).utf8)
        let host = Array(CertificateNames.lowercased(host).utf8)
        if host.starts(with: "*.".utf8) { return presented == host && CertificateNames.isUsableWildcard(presented) }
        return CertificateNames.matches(pattern: presented, host: host)
    }
}
