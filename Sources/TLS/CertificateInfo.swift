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
        dnsNames = Self.dnsNames(x509)
    }

    /// An ASN1_TIME as seconds since the epoch.
    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    private static func dnsNames(_ x509: OpaquePointer) -> [String] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var out: [String] = []
        for index in 0..<max(0, OPENSSL_sk_num(names)) {
            guard let entry = OPENSSL_sk_value(names, index) else { continue }
            let name = entry.assumingMemoryBound(to: GENERAL_NAME.self)
            guard name.pointee.type == GEN_DNS, let string = name.pointee.d.dNSName else { continue }
            let length = Int(ASN1_STRING_length(string))
            guard length > 0, let bytes = ASN1_STRING_get0_data(string) else { continue }
            out.append(String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self).lowercased())
        }
        return out
    }

    /// Whether the certificate is for `host` (an A-label name, or a wildcard site's `*.suffix`).
    public func covers(_ host: String) -> Bool {
        dnsNames.contains { Self.matches(presented: $0, host: host) }
    }

    /// RFC 6125 §6.4 with the restrictions every browser and Apple's clients apply (CA/Browser
    /// Forum Baseline Requirements §7.1.4.2.1): names compare case-insensitively, without a
    /// trailing dot; a wildcard is only the whole left-most label (`*.example.com`, never
    /// `f*.example.com` or `www.*.com`), stands for exactly one non-empty label, and needs at
    /// least two labels after it (`*.com` matches nothing). A wildcard site (`*.example.com`)
    /// serves every name under its suffix, so only the same wildcard covers it.
    public static func matches(presented: String, host: String) -> Bool {
        let presented = normalized(presented)
        let host = normalized(host)
        guard !presented.isEmpty, !host.isEmpty else { return false }
        if host.hasPrefix("*.") { return presented == host && isUsableWildcard(presented) }
        guard presented.contains("*") else { return presented == host }
        guard isUsableWildcard(presented) else { return false }
        let suffix = presented.dropFirst(1)  // ".example.com"
        guard host.hasSuffix(suffix) else { return false }
        let label = host.dropLast(suffix.count)
        return !label.isEmpty && !label.contains(".")
    }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// `*.` then at least two labels, with no other `*` and no empty label.
    private static func isUsableWildcard(_ name: String) -> Bool {
        guard name.hasPrefix("*.") else { return false }
        let rest = name.dropFirst(2).split(separator: ".", omittingEmptySubsequences: false)
        return rest.count >= 2 && rest.allSatisfy { !$0.isEmpty && !$0.contains("*") }
    }
}
