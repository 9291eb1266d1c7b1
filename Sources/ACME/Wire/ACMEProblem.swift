import SafeText

/// A problem document (RFC 8555 §6.7, RFC 7807): the CA's reason for refusing a request. Texts
/// are cut to `ACMELimits.maximumProblemText` and control characters replaced, since they are
/// shown in logs and on `/sites`.
public struct ACMEProblem: Sendable, Equatable, CustomStringConvertible {
    /// The `urn:ietf:params:acme:error:` namespace of RFC 8555 §6.7.
    public static let namespace = "urn:ietf:params:acme:error:"

    public var type: String
    public var detail: String
    public var status: Int?
    /// The identifier this problem is about (in a subproblem, §6.7.1).
    public var identifier: String?
    /// Per-identifier problems (§6.7.1); never nested further.
    public var subproblems: [ACMEProblem]
    /// Seconds to wait before trying again, from the response's Retry-After (RFC 8555 §6.6: a
    /// rateLimited answer carries one); not part of the document itself.
    public var retryAfter: Int64?

    public init(type: String, detail: String = "", status: Int? = nil, identifier: String? = nil, subproblems: [ACMEProblem] = []) {
        self.type = type
        self.detail = detail
        self.status = status
        self.identifier = identifier
        self.subproblems = subproblems
    }

    /// Parses a problem document's body.
    public init(body: some Collection<UInt8>) throws(ACMEError) {
        try self.init(ACMEObject(body: body, what: "problem document"), nested: false)
    }

    init(_ object: ACMEObject, nested: Bool) throws(ACMEError) {
        type = Self.clean(try object.string("type") ?? "about:blank")
        detail = Self.clean(try object.string("detail") ?? "")
        status = try object.smallInteger("status")
        identifier = try object.object("identifier").map { (o) throws(ACMEError) in Self.clean(try o.requiredString("value")) }
        var subproblems: [ACMEProblem] = []
        if !nested, let items = try object.array("subproblems") {
            for item in items { subproblems.append(try ACMEProblem(ACMEObject(item, what: "subproblem"), nested: true)) }
        }
        self.subproblems = subproblems
    }

    /// The short name within RFC 8555's namespace (`badNonce`, `rateLimited`), or nil. RFC 8141
    /// §3.1 makes a URN's `urn:` scheme and its namespace identifier (`ietf`) case-insensitive,
    /// so those compare without ASCII case (and only ASCII's: no Unicode folding); the rest of the
    /// namespace, and the short name, compare exactly.
    public var acmeType: String? {
        let caseless = "urn:ietf:".utf8
        let exact = Self.namespace.utf8.dropFirst(caseless.count)
        let bytes = type.utf8
        guard bytes.count >= caseless.count + exact.count,
            zip(bytes, caseless).allSatisfy({ (0x41...0x5A).contains($0) ? $0 | 0x20 == $1 : $0 == $1 }),
            bytes.dropFirst(caseless.count).starts(with: exact)
        else { return nil }
        return String(Substring(bytes.dropFirst(caseless.count + exact.count)))
    }

    /// RFC 8555 §6.5: the client should retry with a fresh nonce.
    public var isBadNonce: Bool { acmeType == "badNonce" }

    public var description: String {
        var text = acmeType ?? type
        if !detail.isEmpty { text += ": " + detail }
        for sub in subproblems { text += "; " + (sub.identifier.map { $0 + ": " } ?? "") + sub.description }
        return text
    }

    /// At most `maximumProblemText` characters, each character `TerminalText` escapes (controls,
    /// line separators, bidi formatting) as U+FFFD: one character each, so the bound holds.
    static func clean(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(ACMELimits.maximumProblemText) {
            out.append(TerminalText.isEscaped(scalar) ? "\u{FFFD}" : scalar)
        }
        return String(out)
    }
}
