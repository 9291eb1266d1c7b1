import CAASAOpenSSL

/// The DNS names a certificate is valid for: the subjectAltName dNSName entries of its leaf, lower
/// case, read once when the context is loaded. Decides the 421 rule for a request whose host is
/// not the name the client sent in SNI.
public struct CertificateNames: Sendable, Equatable {
    /// Lower-case DNS names, wildcards (`*.example.com`) included, in certificate order.
    public let dnsNames: [String]

    public init(_ dnsNames: [String]) {
        self.dnsNames = dnsNames.map { Self.lowercased($0) }
    }

    /// Whether a client that validated this certificate would accept it for `host` (lower case,
    /// A-label, no port or trailing dot: as `HTTPFields.normalizeHost` leaves it).
    public func covers(_ host: String) -> Bool {
        let host = Array(host.utf8)
        return dnsNames.contains { Self.matches(pattern: Array($0.utf8), host: host) }
    }

    /// RFC 6125 §6.4.3 with the restrictions browsers and Apple's clients apply (CA/Browser Forum
    /// Baseline Requirements §7.1.4.2.1): a `*` is honoured only as the whole left-most label,
    /// followed by at least two non-empty labels, and matches exactly one non-empty label
    /// (`*.example.com` covers `a.example.com`, not `example.com` or `a.b.example.com`); partial
    /// wildcards (`a*.example.com`) and `*.com` match nothing. Both sides lower case, without a
    /// trailing dot. The one rule for the 421 check and `aasad validate` (`CertificateInfo`).
    static func matches(pattern: [UInt8], host: [UInt8]) -> Bool {
        guard !host.isEmpty, !pattern.isEmpty else { return false }
        if pattern == host { return !pattern.contains(42) || isUsableWildcard(pattern) }
        guard isUsableWildcard(pattern), let dot = host.firstIndex(of: 46), dot > 0 else { return false }
        return host[dot...].elementsEqual(pattern[1...])  // ".example.com"
    }

    /// `*.` then at least two labels, none empty, with no other `*`.
    static func isUsableWildcard(_ pattern: [UInt8]) -> Bool {
        guard pattern.count > 2, pattern[0] == 42, pattern[1] == 46 else { return false }
        let labels = pattern[2...].split(separator: 46, omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty && !$0.contains(42) }
    }

    static func lowercased(_ name: String) -> String {
        var bytes = Array(name.utf8)
        for k in bytes.indices where bytes[k] >= 65 && bytes[k] <= 90 { bytes[k] += 32 }
        if bytes.last == 46 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The dNSName entries of a certificate's subjectAltName (none without the extension: RFC 6125
    /// §6.4.4 lets clients fall back to the CN, but Apple's and browsers' clients do not).
    static func of(_ certificate: OpaquePointer) -> CertificateNames {
        guard let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) else { return CertificateNames([]) }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var found: [String] = []
        for i in 0..<max(0, OPENSSL_sk_num(names)) {
            guard let entry = OPENSSL_sk_value(names, i)?.assumingMemoryBound(to: GENERAL_NAME.self),
                entry.pointee.type == GEN_DNS, let ia5 = entry.pointee.d.dNSName,
                let data = ASN1_STRING_get0_data(ia5)
            else { continue }
            let length = Int(ASN1_STRING_length(ia5))
            guard length > 0 else { continue }
            found.append(String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self))
        }
        return CertificateNames(found)
    }
}
