import StrictJSON

/// The outcome of validating one file: the decoded document (when the JSON could be read at all)
/// and every finding. `isValid` is what decides whether the file may be served.
public struct ValidationResult<Document: Sendable>: Sendable {
    /// The document as far as it could be decoded; nil when the bytes or the JSON are unusable.
    public var document: Document?
    public var diagnostics: [Diagnostic]

    public init(document: Document?, diagnostics: [Diagnostic]) {
        self.document = document
        self.diagnostics = diagnostics
    }

    /// True when there is a document and no error: the file may be published.
    public var isValid: Bool { document != nil && diagnostics.isValid }
}

/// Shared walking and reporting for the validators of AASA and assetlinks.json files.
///
/// Decoding and validation are one pass: the decoder builds the model from what is well formed
/// and records a diagnostic for everything that is not, so one run reports every problem.
struct DocumentDecoder {
    /// Diagnostics kept per file. A hostile file could otherwise produce one per byte; the first few
    /// hundred are all a person reads.
    static let maximumDiagnostics = 500

    let bytes: [UInt8]
    private(set) var diagnostics: [Diagnostic] = []
    private var locator = SourceLocator()
    private var dropped = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    var finishedDiagnostics: [Diagnostic] {
        guard dropped > 0 else { return diagnostics }
        return diagnostics + [
            Diagnostic(
                .warning, .moreFindings, path: nil,
                message: "\(dropped) more findings not shown; fix the ones above first")
        ]
    }

    mutating func report(
        _ severity: Diagnostic.Severity, _ rule: Rule, _ path: JSONPath?, _ value: JSONValue?, _ message: String,
        showValue: Bool = true
    ) {
        guard diagnostics.count < Self.maximumDiagnostics else {
            // Errors must never be lost entirely: a dropped error still makes the file invalid.
            if severity == .error && !diagnostics.contains(where: { $0.severity == .error }) {
                diagnostics[diagnostics.count - 1] = Diagnostic(severity, rule, path: path, message: message)
            }
            dropped += 1
            return
        }
        let location = value.map { locator.location(of: $0.offset, in: bytes) }
        diagnostics.append(
            Diagnostic(
                severity, rule, path: path, value: showValue ? value?.excerpt : nil, message: message,
                location: location))
    }

    mutating func error(_ rule: Rule, _ path: JSONPath?, _ value: JSONValue?, _ message: String) {
        report(.error, rule, path, value, message)
    }

    mutating func warning(_ rule: Rule, _ path: JSONPath?, _ value: JSONValue?, _ message: String) {
        report(.warning, rule, path, value, message)
    }

    // MARK: - Bytes and JSON

    /// Checks the bytes (size, BOM, encoding) and parses them as strict JSON. Returns nil, with
    /// the reason recorded, when there is no JSON value to decode. `syntaxNotes` adds a file
    /// kind's own explanation to a syntax error of that reason (e.g. how Apple's parser differs).
    ///
    /// `tooLarge`: the message for a file over `maximumSize`; nil gives Apple's AASA advice.
    mutating func readJSON(
        maximumSize: Int, fileKind: String, tooLarge: String? = nil, syntaxNotes: [JSONSyntaxError.Reason: String] = [:]
    ) -> JSONValue? {
        if bytes.isEmpty {
            error(.fileEmpty, nil, nil, "the file is empty; a half-written file is never served")
            return nil
        }
        if bytes.count > maximumSize {
            error(
                .fileTooLarge, nil, nil,
                tooLarge
                    ?? "the file is larger than \(maximumSize) bytes; \(fileKind) must be at most 128 KB uncompressed, or devices ignore it; remove patterns or split apps across domains"
            )
            return nil
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            error(.byteOrderMark, nil, nil, "the file starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM")
            return nil
        }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) || looksLikeUTF16(bytes) {
            error(.encoding, nil, nil, "the file is UTF-16; save it as UTF-8 without BOM")
            return nil
        }
        do {
            let value = try JSONParser.parse(bytes)
            checkDuplicateKeys(value, .root)
            return value
        } catch {
            let rule: Rule = error.reason == .invalidUTF8 ? .encoding : .jsonSyntax
            let message = syntaxNotes[error.reason].map { "\(error.message). \($0)" } ?? error.message
            diagnostics.append(
                Diagnostic(
                    .error, rule, path: nil, message: message,
                    location: error.location))
            return nil
        }
    }

    /// UTF-16 without a BOM shows as NUL bytes between ASCII ones.
    private func looksLikeUTF16(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && (bytes[0] == 0 || bytes[1] == 0)
    }

    /// RFC 8259 §4: the behaviour of duplicate names is unpredictable (parsers keep the first or the
    /// last), so a duplicate is an error wherever it is. The walk keeps the path as a stack and
    /// builds a `JSONPath` only for a duplicate: most files have none.
    private mutating func checkDuplicateKeys(_ value: JSONValue, _ path: JSONPath) {
        var stack = path.components
        checkDuplicateKeys(value, &stack)
    }

    private mutating func checkDuplicateKeys(_ value: JSONValue, _ stack: inout [JSONPath.Component]) {
        switch value.kind {
        case .object(let members):
            // Small objects (all of an AASA file's) compare pairwise instead of building a set.
            var seen: Set<String>? = members.count > 8 ? Set() : nil
            for (i, member) in members.enumerated() {
                let duplicate: Bool
                if seen != nil {
                    duplicate = !seen!.insert(member.key).inserted
                } else {
                    duplicate = members[..<i].contains { $0.key == member.key }
                }
                stack.append(.key(member.key))
                if duplicate {
                    if diagnostics.count < Self.maximumDiagnostics {
                        let location = locator.location(of: member.keyOffset, in: bytes)
                        diagnostics.append(
                            Diagnostic(
                                .error, .duplicateKey, path: JSONPath(stack),
                                message:
                                    "the key \(JSONValue.quote(member.key)) appears more than once in this object (again at line \(location.line)); parsers disagree on which one wins, so keep exactly one",
                                location: location))
                    } else {
                        dropped += 1
                    }
                }
                checkDuplicateKeys(member.value, &stack)
                stack.removeLast()
            }
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                stack.append(.index(i))
                checkDuplicateKeys(element, &stack)
                stack.removeLast()
            }
        default:
            break
        }
    }

    // MARK: - Typed access

    /// The first member with this key (a duplicate is already reported).
    func member(_ members: [JSONMember], _ key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    mutating func expectObject(_ value: JSONValue, _ path: JSONPath, _ what: String) -> [JSONMember]? {
        if let members = value.objectMembers { return members }
        error(.wrongType, path, value, "\(what) must be an object, found \(value.typeName)")
        return nil
    }

    mutating func expectString(_ value: JSONValue, _ path: JSONPath, _ what: String) -> String? {
        if let s = value.stringValue { return s }
        error(.wrongType, path, value, "\(what) must be a string, found \(value.typeName)")
        return nil
    }

    mutating func expectBool(_ value: JSONValue, _ path: JSONPath, _ what: String) -> Bool? {
        if let b = value.boolValue { return b }
        let hint =
            value.stringValue.map { ["true", "false"].contains($0.lowercased()) ? "; write \($0.lowercased()) without quotes" : "" } ?? ""
        error(.wrongType, path, value, "\(what) must be true or false, found \(value.typeName)\(hint)")
        return nil
    }

    mutating func expectArray(_ value: JSONValue, _ path: JSONPath, _ what: String) -> [JSONValue]? {
        if let a = value.arrayValue { return a }
        let hint = value.stringValue != nil ? "; put the string in brackets: [\(value.excerpt)]" : ""
        error(.wrongType, path, value, "\(what) must be an array, found \(value.typeName)\(hint)")
        return nil
    }

    /// An array of strings; elements of another type are reported and skipped.
    mutating func expectStringArray(_ value: JSONValue, _ path: JSONPath, _ what: String) -> [String]? {
        guard let elements = expectArray(value, path, what) else { return nil }
        var out: [String] = []
        for (i, element) in elements.enumerated() {
            if let s = expectString(element, path.appending(i), "each element of \(what)") {
                out.append(s)
            }
        }
        return out
    }

    /// Warns about every key not in `known`: the system ignores unknown keys (spec §1.1), but an
    /// unknown key is most often a typo of a known one.
    mutating func warnUnknownKeys(_ members: [JSONMember], _ path: JSONPath, known: [String], context: String) {
        for m in members where !known.contains(m.key) {
            // Past the cap a warning is only counted (`report`): no suggestion or message is made
            // for it (a file of 1 MiB of unknown keys has some 170,000).
            guard diagnostics.count < Self.maximumDiagnostics else {
                dropped += 1
                continue
            }
            let suggestion = Self.closest(to: m.key, in: known).map { "; did you mean \(JSONValue.quote($0))?" } ?? ""
            report(
                .warning, .unknownKey, path.appending(m.key), nil,
                "unknown key in \(context), ignored by the system\(suggestion) (known keys: \(known.map(JSONValue.quote).joined(separator: ", ")))",
                showValue: false)
        }
    }

    /// The known key a typo most likely meant: same letters ignoring case, or at most two edits.
    static func closest(to key: String, in known: [String]) -> String? {
        // Within two edits means within two characters of a known key's length: a long key is
        // never close, and is not compared (a file of 1 MiB of unknown keys).
        guard key.utf8.count <= (known.map(\.utf8.count).max() ?? 0) + 2 else { return nil }
        if let same = known.first(where: { $0.lowercased() == key.lowercased() }) { return same }
        let a = Array(key.lowercased().unicodeScalars)
        var best: (String, Int)?
        for candidate in known {
            let b = Array(candidate.lowercased().unicodeScalars)
            var row = Array(0...b.count)
            for i in 1...max(1, a.count) where !a.isEmpty {
                var previous = row[0]
                row[0] = i
                for j in 1...max(1, b.count) where !b.isEmpty {
                    let current = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                    previous = current
                }
            }
            let distance = row[b.count]
            if distance <= 2 && distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }
}
