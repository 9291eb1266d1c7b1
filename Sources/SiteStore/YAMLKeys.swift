import SafeText
import Yams

/// One key of a YAML settings file (site.yaml, aasad.yaml), with where it is written.
public struct YAMLEntry: Sendable {
    /// What the key holds, in the shapes settings take.
    public enum Value: Sendable {
        case scalar(String)
        /// A sequence; an item that is not a scalar is nil.
        case list([String?])
        /// A non-empty sequence of mappings (site.yaml's `routes`): each item's keys in file order.
        case table([[YAMLEntry]])
        /// A mapping inside a table's item (a route's `preview`): its keys in file order.
        case mapping([YAMLEntry])
        /// A mapping or anything else that is neither a scalar nor a list.
        case other
    }

    /// The key path: sections and key joined with dots (`timeouts.idle`).
    public var path: String
    public var value: Value
    /// Where the key is, 1-based, when the parser says.
    public var line: Int?
    public var column: Int?
}

/// The one walk over a YAML settings file's keys (site.yaml and aasad.yaml): it parses the text,
/// descends into sections, and reports every other key in file order with its line, so that
/// both files say what is wrong and where the same way.
public enum YAMLKeys {
    /// What stops a file or a section from being read key by key.
    public enum Failure: Sendable, Equatable {
        /// The text is not YAML: the parser's message.
        case syntax(String)
        /// The file (section "") or a section is not a mapping of keys.
        case notMapping(section: String)
    }

    /// Reads `text` as a mapping of keys. A key for which `isSection(path)` holds is a section:
    /// its mapping is walked in turn, its keys reported as `section.key`. Every other key goes to
    /// `visit`, and whatever stops a part from being read to `fail`, all in file order. An empty
    /// file has no keys and no failure.
    /// `enter` is told each section whose mapping is walked, even an empty one.
    public static func walk(
        _ text: String, isSection: (String) -> Bool = { _ in false }, enter: (String) -> Void = { _ in }, secrets: Set<String> = [],
        visit: (YAMLEntry) -> Void, fail: (Failure) -> Void
    ) {
        let node: Node?
        do {
            // UTF-8 named: the default would read YAMS_DEFAULT_ENCODING from the environment (a
            // whole environment dictionary per file, 7% of the config fuzzer's time), and the files are UTF-8.
            node = try Yams.compose(yaml: text, .default, .default, .utf8)
        } catch {
            fail(.syntax(syntaxMessage(error, text: text, secrets: secrets)))
            return
        }
        guard let node else { return }
        walk(node, prefix: "", isSection: isSection, enter: enter, visit: visit, fail: fail)
    }

    /// Longest part of the file's bad line a syntax message quotes, in characters: the line
    /// helps find the mistake, but a file may be one 64 KB line.
    static let quotedLineLimit = 120

    /// The parser's complaint in one line: where, what, and the line it stopped in, quoted and
    /// escaped (`TerminalText`). Yams' own text puts the raw line and a caret on lines of their
    /// own, so a line holding ESC or CR and a forged log line would reach terminals and logs.
    /// `secrets`: keys' last names whose values are never quoted (`quotedLine`).
    package static func syntaxMessage(_ error: any Error, text: String, secrets: Set<String> = []) -> String {
        guard let error = error as? YamlError else { return TerminalText.escaped("\(error)") }
        let (context, problem, mark): (YamlError.Context?, String, Mark)
        switch error {
        case .scanner(let c, let p, let m, _), .parser(let c, let p, let m, _), .composer(let c, let p, let m, _):
            (context, problem, mark) = (c, p, m)
        case .duplicatedKeysInMapping(let duplicates, let c):
            let keys = duplicates.sorted().map { "\"\(TerminalText.escaped($0))\"" }.joined(separator: ", ")
            return "line \(c.mark.line), column \(c.mark.column): a key is written twice in one mapping: \(keys)"
        case .reader(let problem, let offset, let value, _):
            // A character YAML refuses (a control character): libyaml gives its byte offset.
            let character = value >= 0 ? " (U+\(hex4(value)))" : ""
            guard let offset, let at = position(ofByte: offset, in: text) else { return TerminalText.escaped(problem) + character }
            return
                "line \(at.line), column \(at.column): \(TerminalText.escaped(problem))\(character), in \(quotedLine(at.line, of: text, secrets: secrets))"
        default:
            return TerminalText.escaped("\(error)")
        }
        var message = "line \(mark.line), column \(mark.column): \(TerminalText.escaped(problem))"
        if let context {
            message += " (\(TerminalText.escaped(context.text)) at line \(context.mark.line), column \(context.mark.column))"
        }
        return message + ", in \(quotedLine(mark.line, of: text, secrets: secrets))"
    }

    /// Line `number` (1-based) of `text` quoted and escaped, cut at `quotedLineLimit` characters.
    /// Lines end where libyaml's do (its `IS_BREAK`: CR, LF, CR LF, NEL, U+2028, U+2029), so that
    /// the line is the one its mark counts. The value of a key named in `secrets` (a key's last
    /// name, `google-key`) is shown as `<hidden>`: on the key's line, everything after its colon;
    /// a key whose value starts on a later line hides every later line indented more than it.
    /// What is before the value stays, so the column still points into the line shown.
    static func quotedLine(_ number: Int, of text: String, secrets: Set<String> = []) -> String {
        var line = 1
        var current = String.UnicodeScalarView()
        var afterCR = false
        // The indentation of a secret key whose value is on the lines below (nil: none open).
        var openSecret: Int?
        func finish() -> String? {
            let hidden = hide(current, secrets: secrets, open: &openSecret)
            guard line == number else { return nil }
            let cut = hidden.count > quotedLineLimit
            return quoted(cut ? String.UnicodeScalarView(hidden.prefix(quotedLineLimit)) : hidden, cut: cut)
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where afterCR:
                afterCR = false
            case "\r", "\n", "\u{85}", "\u{2028}", "\u{2029}":
                afterCR = scalar == "\r"
                if let shown = finish() { return shown }
                line += 1
                current = String.UnicodeScalarView()
            default:
                afterCR = false
                current.append(scalar)
            }
        }
        return finish() ?? quoted(String.UnicodeScalarView(), cut: false)
    }

    /// What a syntax message shows of a secret's value.
    static let hiddenValue = "<hidden>"

    /// `line` with the value of a key in `secrets` hidden (`quotedLine`); `open` carries a
    /// secret whose value is on the following lines (its key's indentation).
    private static func hide(_ line: String.UnicodeScalarView, secrets: Set<String>, open: inout Int?) -> String.UnicodeScalarView {
        guard !secrets.isEmpty else { return line }
        let scalars = Array(line)
        let indentation = scalars.prefix { $0 == " " || $0 == "\t" }.count
        if let key = open {
            if indentation == scalars.count { return line }
            if indentation > key { return String.UnicodeScalarView(scalars.prefix(indentation)) + hiddenValue.unicodeScalars }
            open = nil
        }
        for secret in secrets {
            let name = Array(secret.unicodeScalars)
            guard !name.isEmpty, scalars.count >= name.count else { continue }
            for start in 0...(scalars.count - name.count) where Array(scalars[start..<start + name.count]) == name {
                // The name, maybe in quotes, then spaces, then the colon that makes it a key.
                var at = start + name.count
                while at < scalars.count, scalars[at] == "\"" || scalars[at] == "'" || scalars[at] == " " { at += 1 }
                guard at < scalars.count, scalars[at] == ":" else { continue }
                let value = scalars[(at + 1)...].drop { $0 == " " || $0 == "\t" }
                if value.isEmpty || value.first == "#" || value.first == "|" || value.first == ">" {
                    open = indentation
                    if value.isEmpty || value.first == "#" { return line }
                }
                return String.UnicodeScalarView(scalars.prefix(at + 1)) + " \(hiddenValue)".unicodeScalars
            }
        }
        return line
    }

    /// The line and column (1-based, columns in characters as libyaml counts them) of the
    /// character at byte `offset`; nil past the end.
    static func position(ofByte offset: Int, in text: String) -> (line: Int, column: Int)? {
        var (line, column, byte) = (1, 1, 0)
        var afterCR = false
        for scalar in text.unicodeScalars {
            if byte >= offset { return (line, column) }
            byte += UTF8.width(scalar)
            switch scalar {
            case "\n" where afterCR:
                afterCR = false
            case "\r", "\n", "\u{85}", "\u{2028}", "\u{2029}":
                afterCR = scalar == "\r"
                (line, column) = (line + 1, 1)
            default:
                afterCR = false
                column += 1
            }
        }
        return byte >= offset ? (line, column) : nil
    }

    private static func hex4(_ value: Int32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func quoted(_ line: String.UnicodeScalarView, cut: Bool) -> String {
        "\"" + TerminalText.escaped(String(line)) + (cut ? "…" : "") + "\""
    }

    private static func walk(
        _ node: Node, prefix: String, isSection: (String) -> Bool, enter: (String) -> Void, visit: (YAMLEntry) -> Void,
        fail: (Failure) -> Void
    ) {
        guard let mapping = node.mapping else {
            fail(.notMapping(section: prefix.isEmpty ? "" : String(prefix.dropLast())))
            return
        }
        if !prefix.isEmpty { enter(String(prefix.dropLast())) }
        for (keyNode, value) in mapping {
            // Escaped: the path is quoted in messages when the key is unknown (a key holding a
            // control character is never a known one, so nothing it could match is lost).
            let path = prefix + TerminalText.escaped(keyNode.string ?? "\(keyNode)")
            if isSection(path) {
                walk(value, prefix: path + ".", isSection: isSection, enter: enter, visit: visit, fail: fail)
                continue
            }
            visit(YAMLEntry(path: path, value: shape(value, nested: false), line: keyNode.mark?.line, column: keyNode.mark?.column))
        }
    }

    /// A value's shape. A sequence whose items are all mappings is a table; inside a table's
    /// item (`nested`), a mapping is given key by key, one level down only (a route's `preview`),
    /// so that the depth a file can make the walk go is fixed.
    private static func shape(_ value: Node, nested: Bool) -> YAMLEntry.Value {
        if let scalar = value.scalar?.string { return .scalar(scalar) }
        if let list = value.sequence {
            if !nested, !list.isEmpty, list.allSatisfy({ $0.mapping != nil }) {
                return .table(list.map { entries($0, nestedShapes: true) })
            }
            return .list(list.map { $0.scalar?.string })
        }
        if nested, value.mapping != nil { return .mapping(entries(value, nestedShapes: false)) }
        return .other
    }

    /// A mapping's keys (escaped as the walk escapes them) and their shapes, in file order.
    private static func entries(_ node: Node, nestedShapes: Bool) -> [YAMLEntry] {
        guard let mapping = node.mapping else { return [] }
        return mapping.map { keyNode, value in
            let path = TerminalText.escaped(keyNode.string ?? "\(keyNode)")
            let valueShape: YAMLEntry.Value
            if nestedShapes {
                valueShape = shape(value, nested: true)
            } else if let scalar = value.scalar?.string {
                valueShape = .scalar(scalar)
            } else if let list = value.sequence {
                valueShape = .list(list.map { $0.scalar?.string })
            } else {
                valueShape = .other
            }
            return YAMLEntry(path: path, value: valueShape, line: keyNode.mark?.line, column: keyNode.mark?.column)
        }
    }
}
