import SafeText
import Served

/// The operator's bound on what tenants may alias: the config root's `aliases-allowed` file
/// (never inside a site directory, so no tenant writes it). Without the file, any alias is
/// subject to `HostOwnership`'s rule alone; with it, a site.yaml alias outside the site's
/// patterns is refused too. One line per site, `#` to the end of a line is a comment:
///
///     shop.test   shop.example  *.shop.example   # exactly shop.example, or anything under it
///     *           -                               # every site not listed: no alias at all
///
/// A pattern is a host name (that alias exactly) or `*.domain` (any alias under the domain, a
/// wildcard one included); `-` alone allows nothing. The site `*` stands for every site without
/// a line of its own; without a `*` line, such sites may alias nothing.
public struct AliasPolicy: Sendable, Equatable {
    /// The file's name at the config root.
    public static let fileName = "aliases-allowed"
    /// Largest file read: 100,000 sites with a 40-byte line each is 4 MB.
    public static let maximumFileSize = 16 << 20

    /// Patterns by site directory name.
    public var bySite: [String: [HostName]]
    /// Patterns of the sites without a line.
    public var others: [HostName]

    public init(bySite: [String: [HostName]] = [:], others: [HostName] = []) {
        self.bySite = bySite
        self.others = others
    }

    /// Whether `site` may alias `alias`.
    public func allows(_ alias: HostName, site: String) -> Bool {
        (bySite[site] ?? others).contains { pattern in
            if pattern == alias { return true }
            guard let suffix = pattern.wildcardSuffix else { return false }
            return (alias.wildcardSuffix ?? alias.name).hasSuffix("." + suffix)
        }
    }

    /// What is wrong with the file: its line, and why (then none of it is used).
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    /// Parses the file's text (pure: no I/O, for HostOwnership's fuzz target too).
    public static func parse(_ text: String) -> Result<AliasPolicy, ParseError> {
        var policy = AliasPolicy()
        var sawOthers = false
        // A line ends at LF or CRLF (one Character in Swift, which a split at "\n" would not see:
        // a file saved with CRLF would be one long line, refused whole).
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, raw) in lines.enumerated() {
            func problem(_ message: String) -> Result<AliasPolicy, ParseError> {
                .failure(ParseError(line: index + 1, reason: message))
            }
            let line = raw.prefix { $0 != "#" }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let site = fields.first else { continue }
            guard fields.count >= 2 else { return problem("a site and its patterns (or -), e.g. shop.test shop.example *.shop.example") }
            var patterns: [HostName] = []
            if fields.count == 2 && fields[1] == "-" {
                patterns = []
            } else {
                for field in fields.dropFirst() {
                    guard let pattern = try? HostName(parsing: field) else {
                        return problem("\"\(TerminalText.escaped(field))\" is not a host name or *.domain")
                    }
                    patterns.append(pattern)
                }
            }
            if site == "*" {
                guard !sawOthers else { return problem("a second line for *") }
                sawOthers = true
                policy.others = patterns
            } else {
                guard (try? HostName(parsing: site)) != nil else {
                    return problem("\"\(TerminalText.escaped(site))\" is not a site directory name")
                }
                guard policy.bySite.updateValue(patterns, forKey: site) == nil else { return problem("a second line for \(site)") }
            }
        }
        return .success(policy)
    }
}
