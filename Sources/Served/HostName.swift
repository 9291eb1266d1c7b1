import Foundation
import SafeText

/// A host name a site answers for: lower case, A-labels only, optionally a wildcard `*.suffix`
/// (docs/architecture.md on the config directory; spec §2 on wildcards and Punycode).
public struct HostName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Longest host name (RFC 1035 §2.3.4).
    public static let maximumLength = 253
    /// Longest label (RFC 1035 §2.3.4).
    public static let maximumLabelLength = 63

    /// The normalised name, e.g. `links.example.com` or `*.users.example.com`.
    public let name: String

    /// True for `*.suffix`, which answers for every name below the suffix (not the suffix itself).
    public var isWildcard: Bool { name.hasPrefix("*.") }

    /// For a wildcard, the part after `*.`.
    public var wildcardSuffix: String? { isWildcard ? String(name.dropFirst(2)) : nil }

    public var description: String { name }

    public static func < (a: HostName, b: HostName) -> Bool { a.name < b.name }

    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case tooLong(Int)
        case unicode(suggested: String?)
        case badLabel(String, reason: String)
        case misplacedWildcard
        case port

        public var description: String {
            switch self {
            case .empty:
                "the host name is empty"
            case .tooLong(let n):
                "the host name is \(n) characters; at most \(HostName.maximumLength) are allowed"
            case .unicode(let suggested):
                if let suggested {
                    // Escaped: the name's ASCII labels are kept as written, a tab or CR included.
                    "the host name is not ASCII; name it in A-label (Punycode) form: \(TerminalText.escaped(suggested))"
                } else {
                    "the host name is not ASCII and has no valid A-label (Punycode) form"
                }
            case .badLabel(let label, let reason):
                // Escaped: a label holding CR or LF must not split the log line that reports it.
                "the label \"\(TerminalText.escaped(label))\" \(reason)"
            case .misplacedWildcard:
                "a wildcard must be the whole first label, as in *.example.com"
            case .port:
                "a host name has no port; associated domains never include one"
            }
        }
    }

    /// Parses and normalises a host name. Upper-case ASCII is lowered (host names are
    /// case-insensitive); Unicode is refused with its `xn--` form, since Apple matches A-labels.
    public init(parsing raw: String) throws(Problem) {
        name = Self.isPlain(raw.utf8) ? raw : try Self.normalise(raw)
    }

    /// `*.domain`, for a domain taken from a name in normal form (two labels or more).
    package init(wildcardOver domain: String) {
        name = "*." + domain
    }

    /// How many labels the name has (`*` counts as one).
    package var labelCount: Int { name.utf8.count { $0 == UInt8(ascii: ".") } + 1 }

    /// The full parse: the normal form of any name, or what is wrong with it.
    package static func normalise(_ raw: String) throws(Problem) -> String {
        var text = raw
        if text.hasSuffix(".") { text.removeLast() }
        guard !text.isEmpty else { throw .empty }
        if !text.unicodeScalars.allSatisfy(\.isASCII) {
            throw .unicode(suggested: Self.aLabelForm(of: text))
        }
        text = text.lowercased()
        if text.contains(":") { throw .port }
        guard text.utf8.count <= Self.maximumLength else { throw .tooLong(text.utf8.count) }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        for (i, label) in labels.enumerated() {
            if label == "*" {
                guard i == 0, labels.count >= 3 else {
                    throw i == 0
                        ? .badLabel(
                            "*", reason: "needs at least two labels after it (a wildcard over a top-level domain would claim every site)")
                        : .misplacedWildcard
                }
                continue
            }
            if label.contains("*") { throw .misplacedWildcard }
            if label.isEmpty { throw .badLabel("", reason: "is empty (two dots in a row, or a leading dot)") }
            if label.utf8.count > Self.maximumLabelLength {
                throw .badLabel(String(label), reason: "is longer than \(Self.maximumLabelLength) characters")
            }
            if let bad = label.unicodeScalars.first(where: { !(("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-") }) {
                throw .badLabel(
                    String(label), reason: "contains '\(TerminalText.escaped(String(bad)))'; host names use only letters, digits and '-'")
            }
            if label.hasPrefix("-") || label.hasSuffix("-") {
                throw .badLabel(String(label), reason: "starts or ends with '-'")
            }
        }
        return text
    }

    /// Whether a name is already in normal form and valid: labels of lower-case letters, digits
    /// and inner hyphens, 1 to 63 bytes each, 253 in all, no wildcard and no final dot. One pass
    /// over the bytes for what nearly every site directory is called; anything else takes the
    /// full parse, which also says what is wrong.
    package static func isPlain(_ bytes: String.UTF8View) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        var labelLength = 0
        var previous: UInt8 = UInt8(ascii: ".")
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                labelLength += 1
            case UInt8(ascii: "-"):
                guard previous != UInt8(ascii: ".") else { return false }
                labelLength += 1
            case UInt8(ascii: "."):
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return false }
                labelLength = 0
            default:
                return false
            }
            guard labelLength <= maximumLabelLength else { return false }
            previous = byte
        }
        return labelLength > 0 && previous != UInt8(ascii: "-")
    }

    /// The IDNA A-label form of a Unicode name: each non-ASCII label lower-cased, normalised to
    /// NFC and Punycode-encoded with `xn--`.
    public static func aLabelForm(of text: String) -> String? {
        var out: [String] = []
        for label in text.precomposedStringWithCanonicalMapping.lowercased().split(separator: ".", omittingEmptySubsequences: false) {
            if label.unicodeScalars.allSatisfy(\.isASCII) {
                out.append(String(label))
            } else {
                guard let encoded = Punycode.encode(String(label)) else { return nil }
                out.append("xn--" + encoded)
            }
        }
        return out.joined(separator: ".")
    }

    /// Whether this name answers for a request's host (already lower case, without port).
    public func covers(_ host: String) -> Bool {
        if let suffix = wildcardSuffix {
            return host.hasSuffix("." + suffix) && host.utf8.count > suffix.utf8.count + 1
        }
        return host == name
    }
}
