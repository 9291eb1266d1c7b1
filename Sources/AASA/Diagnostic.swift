public import StrictJSON

/// One finding of the validator: an error makes the file unpublishable, a warning does not.
///
/// Rendered as `applinks.details[2].appID: "ABC.com.x" — the team ID prefix must be 10 characters …`
/// (the caller puts the file name in front: `sites/a.test/apple-app-site-association: applinks…`).
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable, Codable {
        case error
        case warning
    }

    public var severity: Severity
    /// The rule broken: a stable identifier scripts can filter on.
    public var rule: Rule
    /// The JSON path of the offending value; nil for problems with the bytes themselves.
    public var path: JSONPath?
    /// A short rendering of the offending value, when it helps.
    public var value: String?
    /// What is wrong and what to do, in one sentence.
    public var message: String
    /// Line and column in the file, when known.
    public var location: SourceLocation?

    public init(
        _ severity: Severity, _ rule: Rule, path: JSONPath?, value: String? = nil, message: String,
        location: SourceLocation? = nil
    ) {
        self.severity = severity
        self.rule = rule
        self.path = path
        self.value = value
        self.message = message
        self.location = location
    }

    public var description: String {
        var out = ""
        if let path { out += "\(path): " }
        if let value { out += "\(value) — " }
        out += message
        return out
    }
}

extension Array where Element == Diagnostic {
    /// True when nothing here stops the file from being served.
    public var isValid: Bool { !contains { $0.severity == .error } }
    public var errors: [Diagnostic] { filter { $0.severity == .error } }
    public var warnings: [Diagnostic] { filter { $0.severity == .warning } }
}
