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
    /// A-label, no port or trailing dot: as `Responder.normalizeHost` leaves it). RFC 6125 §6.4.3:
    /// a `*` is honoured only as the whole left-most label, and matches exactly one non-empty label
    /// (`*.example.com` covers `a.example.com`, not `example.com` or `a.b.example.com`); partial
    /// wildcards (`a*.example.com`), which the CA/Browser Forum forbids, match nothing.
    public func covers(_ host: String) -> Bool {
        let host = Array(host.utf8)
        guard !host.isEmpty else { return false }
        for name in dnsNames {
            let pattern = Array(name.utf8)
            if pattern == host { return true }
            // "*." + at least two labels: a wildcard over a single label (`*.com`) is refused.
            guard pattern.count > 2, pattern[0] == 42, pattern[1] == 46 else { continue }
            let suffix = pattern[1...]  // ".example.com"
            guard suffix.dropFirst().contains(46), !suffix.dropFirst().contains(42) else { continue }
            guard let dot = host.firstIndex(of: 46), dot > 0 else { continue }
            if host[dot...].elementsEqual(suffix) { return true }
        }
        return false
    }

    private static func lowercased(_ name: String) -> String {
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
        for i in 0..<OPENSSL_sk_num(names) {
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
