import Yams

/// One key of a YAML settings file (site.yaml, aasad.yaml), with where it is written.
public struct YAMLEntry: Sendable {
    /// What the key holds, in the shapes settings take.
    public enum Value: Sendable {
        case scalar(String)
        /// A sequence; an item that is not a scalar is nil.
        case list([String?])
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
        _ text: String, isSection: (String) -> Bool = { _ in false }, enter: (String) -> Void = { _ in }, visit: (YAMLEntry) -> Void,
        fail: (Failure) -> Void
    ) {
        let node: Node?
        do {
            // UTF-8 named: the default would read YAMS_DEFAULT_ENCODING from the environment (a
            // whole environment dictionary per file, 7% of the config fuzzer's time), and the files are UTF-8.
            node = try Yams.compose(yaml: text, .default, .default, .utf8)
        } catch {
            fail(.syntax("\(error)"))
            return
        }
        guard let node else { return }
        walk(node, prefix: "", isSection: isSection, enter: enter, visit: visit, fail: fail)
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
            let path = prefix + (keyNode.string ?? "\(keyNode)")
            if isSection(path) {
                walk(value, prefix: path + ".", isSection: isSection, enter: enter, visit: visit, fail: fail)
                continue
            }
            let shape: YAMLEntry.Value
            if let scalar = value.scalar?.string {
                shape = .scalar(scalar)
            } else if let list = value.sequence {
                shape = .list(list.map { $0.scalar?.string })
            } else {
                shape = .other
            }
            visit(YAMLEntry(path: path, value: shape, line: keyNode.mark?.line, column: keyNode.mark?.column))
        }
    }
}
