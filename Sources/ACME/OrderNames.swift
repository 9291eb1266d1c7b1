/// The DNS names of one order, checked before anything is sent: what the CSR, the order's
/// identifiers and the issued certificate are compared against.
public enum OrderNames {
    /// Longest label (RFC 1035 §2.3.4).
    public static let maximumLabelLength = 63

    /// `names` lower-cased, without a trailing dot, duplicates dropped (first one kept), in the
    /// caller's order; refused unless there are 1 to `ACMELimits.maximumOrderNames` of them and
    /// each is a host name CAs issue for: labels of letters, digits and inner hyphens (RFC 1123
    /// §2.1; A-labels for internationalised names, RFC 5890), 1 to 63 characters, at most 253 in
    /// all, and `*` only as a whole left-most label followed by at least two labels (RFC 8555
    /// §7.1.3; CA/Browser Forum Baseline Requirements §3.2.2.6). Underscores are refused: public
    /// CAs may not issue for them (Baseline Requirements §7.1.4.2.1).
    public static func normalized(_ names: [String]) throws(ACMEError) -> [String] {
        guard !names.isEmpty else { throw .request("an order needs at least one name") }
        var out: [String] = []
        var seen: Set<String> = []
        for name in names {
            let normalized = try normalized(name)
            if seen.insert(normalized).inserted { out.append(normalized) }
        }
        guard out.count <= ACMELimits.maximumOrderNames else {
            throw .request("\(out.count) names in one order; a CA issues for at most \(ACMELimits.maximumOrderNames)")
        }
        return out
    }

    /// One name, normalised as above.
    public static func normalized(_ name: String) throws(ACMEError) -> String {
        var bytes = Array(name.utf8)
        let shown = ACMEProblem.clean(name)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        guard !bytes.isEmpty, bytes.count <= ACMELimits.maximumNameLength else {
            throw .request("\"\(shown)\" is not 1 to \(ACMELimits.maximumNameLength) characters long")
        }
        for i in bytes.indices where bytes[i] >= UInt8(ascii: "A") && bytes[i] <= UInt8(ascii: "Z") { bytes[i] += 0x20 }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if index == 0, label.elementsEqual([UInt8(ascii: "*")]) {
                guard labels.count >= 3 else { throw .request("\"\(shown)\": a wildcard needs at least two labels after \"*.\"") }
                continue
            }
            guard !label.isEmpty, label.count <= maximumLabelLength else {
                throw .request("\"\(shown)\" has an empty label or one longer than \(maximumLabelLength) characters")
            }
            guard label.allSatisfy(isLabelByte), label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                throw .request(
                    "\"\(shown)\" is not a host name: letters, digits and inner hyphens only (internationalised names in their xn-- form)")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether an order name is a wildcard (`*.example.com`).
    public static func isWildcard(_ name: String) -> Bool { name.hasPrefix("*.") }

    private static func isLabelByte(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "-")
    }
}
