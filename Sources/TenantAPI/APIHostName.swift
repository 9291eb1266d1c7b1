import Served

/// The `{host}` of `/v1/sites/{host}` and the names in a token's patterns (docs/api.md): a host
/// name exactly as the site's directory under `sites/` is named, checked as bytes before anything
/// touches the filesystem with it. Lower-case LDH labels (RFC 1123 §2.1), an optional single
/// leading `*.` label (a wildcard site), no trailing dot, at most 253 bytes, not an IP address.
/// Nothing is decoded or normalised: a name in any other form (`%2e%2e`, `A.example`,
/// `a.example.`, a Unicode label) is refused, never mapped to a directory that may exist.
package enum APIHostName {
    /// Why `raw` is not a host the API accepts, or nil when it is one.
    package static func problem(_ raw: Substring) -> String? {
        let bytes = Array(raw.utf8)
        guard !bytes.isEmpty else { return "the host name is empty" }
        guard bytes.count <= HostName.maximumLength else {
            return "the host name is \(bytes.count) bytes; at most \(HostName.maximumLength) are allowed"
        }
        for byte in bytes {
            let allowed =
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E || byte == 0x2A
            guard allowed else {
                if byte >= 0x41 && byte <= 0x5A { return "host names are written in lower case" }
                if byte == 0x25 { return "percent-escapes are not decoded; write the host name itself" }
                if byte >= 0x80 { return "the host name is not ASCII; write it in its A-label (xn--) form" }
                return "a host name holds only lower-case letters, digits, '-' and '.'"
            }
        }
        var labels = raw.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*" {
            guard labels.count > 2 else { return "a wildcard covers a domain of two labels or more, as in *.example.com" }
            labels.removeFirst()
        }
        for label in labels {
            if label.isEmpty { return "a host name has no empty label (no '..', no leading or trailing dot)" }
            if label.utf8.count > HostName.maximumLabelLength {
                return "a label is at most \(HostName.maximumLabelLength) bytes"
            }
            if label.contains("*") { return "a wildcard must be the whole first label, as in *.example.com" }
            if label.hasPrefix("-") || label.hasSuffix("-") { return "a label neither starts nor ends with '-'" }
        }
        // An IPv4 address in any of inet_aton's forms ends in an all-digit label; no top-level
        // domain is all digits (RFC 3696 §2).
        if let last = labels.last, last.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return "an IP address is not a site; sites are host names"
        }
        // The name the loader would give the directory must be this one, byte for byte.
        guard let parsed = try? HostName(parsing: String(raw)), parsed.name == raw else {
            return "not a host name in its normal form"
        }
        return nil
    }
}
