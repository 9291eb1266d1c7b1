import SafeText

/// A URL to test against an AASA file, split as RFC 3986 §3 does (spec §6 step 1).
///
/// Path, query and fragment keep their percent-encoding, as the URL is transmitted. Characters
/// a URL cannot carry literally (spaces, non-ASCII, `"`, `<`, `>`, …) are percent-encoded as UTF-8
/// first, as a browser or `URLComponents` does before the link reaches the system.
public struct LinkURL: Sendable, Equatable, CustomStringConvertible {
    /// Longest URL accepted, in bytes. Matching costs grow with the length, and no real link is
    /// longer (browsers and servers commonly stop at 8 KB).
    public static let maximumLength = 8_192

    /// `http` or `https`, lower case; nil for a path-only input such as `/buy/1?x=2`.
    public var scheme: String?
    /// The host, lower case, without user info or port; nil for a path-only input.
    public var host: String?
    /// The path, percent-encoded, possibly empty.
    public var path: String
    /// The query without `?`; nil when the URL has no `?`.
    public var query: String?
    /// The fragment without `#`; nil when the URL has no `#`.
    public var fragment: String?

    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case tooLong(Int)
        case unsupportedScheme(String)
        case notAURL
        case missingHost

        public var description: String {
            switch self {
            case .tooLong(let n):
                "the URL is \(n) bytes; at most \(LinkURL.maximumLength) are accepted"
            case .unsupportedScheme(let s):
                "only http and https URLs are universal links (found \"\(s):\")"
            case .notAURL:
                "not a URL: write https://host/path, or a path starting with / when the file is given with --file"
            case .missingHost:
                "the URL has no host"
            }
        }
    }

    public init(parsing input: String) throws(ParseError) {
        let utf8Count = input.utf8.count
        guard utf8Count <= Self.maximumLength else { throw .tooLong(utf8Count) }
        var rest = Substring(input)
        if rest.hasPrefix("/") && !rest.hasPrefix("//") {
            scheme = nil
            host = nil
        } else {
            guard let colon = rest.firstIndex(of: ":"),
                let first = rest.first, first.isLetter,
                rest[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) })
            else { throw .notAURL }
            let s = rest[..<colon].lowercased()
            guard s == "http" || s == "https" else { throw .unsupportedScheme(String(rest[..<colon])) }
            scheme = s
            rest = rest[rest.index(after: colon)...]
            guard rest.hasPrefix("//") else { throw .notAURL }
            rest = rest.dropFirst(2)
            let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            rest = rest[authorityEnd...]
            if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
            var hostPart = authority
            if hostPart.hasPrefix("["), let close = hostPart.firstIndex(of: "]") {
                hostPart = hostPart[...close]
            } else if let colon = hostPart.lastIndex(of: ":") {
                hostPart = hostPart[..<colon]
            }
            guard !hostPart.isEmpty else { throw .missingHost }
            var h = hostPart.lowercased()
            if h.hasSuffix(".") { h.removeLast() }
            host = h
        }
        var fragmentPart: Substring?
        if let hash = rest.firstIndex(of: "#") {
            fragmentPart = rest[rest.index(after: hash)...]
            rest = rest[..<hash]
        }
        var queryPart: Substring?
        if let q = rest.firstIndex(of: "?") {
            queryPart = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        path = Self.encodeUnsafe(rest)
        query = queryPart.map(Self.encodeUnsafe)
        fragment = fragmentPart.map(Self.encodeUnsafe)
    }

    public var description: String {
        var out = ""
        if let scheme, let host { out = "\(scheme)://\(host)" }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// Percent-encodes, as UTF-8, every character RFC 3986 does not allow literally (it keeps
    /// unreserved, reserved and `%`).
    static func encodeUnsafe(_ s: Substring) -> String {
        var out = ""
        for byte in s.utf8 {
            if isAllowed(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + hexByte(byte)
            }
        }
        return out
    }

    private static func isAllowed(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~:/?#[]@!$&'()*+,;=%".utf8.contains(b)
        }
    }

    private static func hexByte(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
    }

    /// Percent-decodes as UTF-8 (spec §1.8, `percentEncoded: false`). A `%` not followed by two
    /// hex digits stays as it is; when the decoded bytes are not UTF-8 the text is left encoded,
    /// since no Unicode string could represent it.
    public static func percentDecode(_ s: String) -> String {
        guard s.contains("%") else { return s }
        var bytes: [UInt8] = []
        let utf8 = Array(s.utf8)
        var i = 0
        while i < utf8.count {
            if utf8[i] == UInt8(ascii: "%"), i + 2 < utf8.count,
                let hi = HexDigit.value(utf8[i + 1]), let lo = HexDigit.value(utf8[i + 2])
            {
                bytes.append(hi << 4 | lo)
                i += 3
            } else {
                bytes.append(utf8[i])
                i += 1
            }
        }
        return String(validating: bytes, as: UTF8.self) ?? s
    }

    /// The query's items as NSURLComponents reads them (spec §1.6): split at `&`, empty pieces
    /// skipped, name and value split at the first `=`, an item without `=` has the empty value,
    /// `+` is not a space.
    public static func queryItems(_ query: String?, decoded: Bool) -> [(name: String, value: String)] {
        guard let query else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { piece in
            let name: Substring
            let value: Substring
            if let eq = piece.firstIndex(of: "=") {
                name = piece[..<eq]
                value = piece[piece.index(after: eq)...]
            } else {
                name = piece
                value = ""
            }
            return decoded ? (percentDecode(String(name)), percentDecode(String(value))) : (String(name), String(value))
        }
    }
}
