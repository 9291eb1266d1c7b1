import StrictJSON

/// A JSON object from a CA, read strictly: the body is bounded (`ACMELimits.maximumBodyBytes`),
/// parsed by the AASA module's strict parser (RFC 8259, bounded depth, UTF-8 checked), and a key
/// given twice is refused, since two readers of the same object could see different values.
/// Missing members are nil; a member of the wrong type is an error.
struct ACMEObject {
    /// What is being read, for error messages ("directory", "order").
    let what: String
    private let members: [String: JSONValue]

    /// Parses `body` as one JSON object.
    init(body: some Collection<UInt8>, what: String) throws(ACMEError) {
        guard body.count <= ACMELimits.maximumBodyBytes else {
            throw .malformed(what: what, reason: "the body is over \(ACMELimits.maximumBodyBytes) bytes")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(body))
        } catch {
            throw .malformed(what: what, reason: "not JSON: \(error.message)")
        }
        try self.init(value, what: what)
    }

    /// Reads a parsed value that must be an object.
    init(_ value: JSONValue, what: String) throws(ACMEError) {
        guard let list = value.objectMembers else { throw .malformed(what: what, reason: "\(value.typeName) where an object belongs") }
        var members: [String: JSONValue] = [:]
        for member in list {
            guard members.updateValue(member.value, forKey: member.key) == nil else {
                throw .malformed(what: what, reason: "the key \(JSONValue.quote(member.key)) appears twice")
            }
        }
        self.what = what
        self.members = members
    }

    private func wrongType(_ key: String, _ value: JSONValue, _ expected: String) -> ACMEError {
        .malformed(what: what, reason: "\(key) is \(value.typeName), not \(expected)")
    }

    func string(_ key: String) throws(ACMEError) -> String? {
        guard let value = members[key] else { return nil }
        guard let s = value.stringValue else { throw wrongType(key, value, "a string") }
        return s
    }

    func requiredString(_ key: String) throws(ACMEError) -> String {
        guard let s = try string(key) else { throw .malformed(what: what, reason: "\(key) is missing") }
        return s
    }

    func bool(_ key: String) throws(ACMEError) -> Bool? {
        guard let value = members[key] else { return nil }
        guard let b = value.boolValue else { throw wrongType(key, value, "a boolean") }
        return b
    }

    /// A non-negative integer member that fits an Int32 (an HTTP status); nil when missing.
    func smallInteger(_ key: String) throws(ACMEError) -> Int? {
        guard let value = members[key] else { return nil }
        guard case .number(let text) = value.kind, !text.isEmpty, text.utf8.count <= 9,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw wrongType(key, value, "a small whole number") }
        // At most nine digits: always fits.
        return text.utf8.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    func object(_ key: String) throws(ACMEError) -> ACMEObject? {
        guard let value = members[key] else { return nil }
        return try ACMEObject(value, what: "\(what).\(key)")
    }

    /// An array member, bounded by `ACMELimits.maximumArrayCount`; nil when missing.
    func array(_ key: String) throws(ACMEError) -> [JSONValue]? {
        guard let value = members[key] else { return nil }
        guard let items = value.arrayValue else { throw wrongType(key, value, "an array") }
        guard items.count <= ACMELimits.maximumArrayCount else {
            throw .malformed(what: what, reason: "\(key) has more than \(ACMELimits.maximumArrayCount) entries")
        }
        return items
    }

    /// An array of strings.
    func strings(_ key: String) throws(ACMEError) -> [String]? {
        guard let items = try array(key) else { return nil }
        var out: [String] = []
        for item in items {
            guard let s = item.stringValue else { throw wrongType(key, item, "an array of strings") }
            out.append(s)
        }
        return out
    }

    func url(_ key: String) throws(ACMEError) -> ACMEURL? {
        guard let s = try string(key) else { return nil }
        return try ACMEURL(s, what: "\(what).\(key)")
    }

    func requiredURL(_ key: String) throws(ACMEError) -> ACMEURL {
        guard let url = try url(key) else { throw .malformed(what: what, reason: "\(key) is missing") }
        return url
    }
}

/// A URL the CA gave: `https` only (RFC 8555 §6.1: all ACME communication is over HTTPS),
/// printable ASCII without spaces, bounded. It is handed to libcurl as is and never used to name
/// a file.
public struct ACMEURL: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public init(_ text: String, what: String = "URL") throws(ACMEError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= ACMELimits.maximumURLLength else {
            throw .malformed(what: what, reason: "the URL is longer than \(ACMELimits.maximumURLLength) bytes")
        }
        // RFC 3986 §2: a URL is printable ASCII; a space, control byte or non-ASCII byte would be
        // read differently by different parsers.
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed(what: what, reason: "the URL holds a space, control or non-ASCII byte")
        }
        let scheme = Array("https://".utf8)
        guard bytes.count > scheme.count, bytes.prefix(scheme.count).map({ $0 | 0x20 }) == scheme.map({ $0 | 0x20 }) else {
            throw .malformed(what: what, reason: "not an https URL")
        }
        let host = bytes[scheme.count...].prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        guard !host.isEmpty, !host.contains(UInt8(ascii: "@")) else {
            throw .malformed(what: what, reason: "the URL has no host, or carries credentials")
        }
        self.text = text
    }

    public var description: String { text }
}
