import Foundation

/// A site's optional `site.yaml`:
///
/// ```yaml
/// aliases:            # more host names served by this site
///   - www.example.com
///   - example.net
/// cache-control: max-age=60   # this site's Cache-Control (default: the server's)
/// ```
///
/// Unknown keys are errors naming the key (a typo must not be silently ignored).
public struct SiteSettings: Sendable, Equatable {
    public var aliases: [HostName] = []
    public var cacheControl: String?

    /// Largest site.yaml read.
    public static let maximumFileSize = 64 * 1024
    static let keys = ["aliases", "cache-control"]

    public init(aliases: [HostName] = [], cacheControl: String? = nil) {
        self.aliases = aliases
        self.cacheControl = cacheControl
    }

    /// Parses site.yaml text; the problems say what is wrong, key by key.
    public static func parse(_ text: String, file: String) -> (SiteSettings, [ConfigProblem]) {
        var settings = SiteSettings()
        var problems: [ConfigProblem] = []
        func problem(_ message: String) { problems.append(ConfigProblem(severity: .error, file: file, message: message)) }
        YAMLKeys.walk(text) { entry in
            // The key and its line, so that a long file's problem can be found (1-based).
            let at = entry.path + (entry.line.map { " (line \($0))" } ?? "")
            switch entry.path {
            case "aliases":
                guard case .list(let items) = entry.value else {
                    problem("\(at): must be a list of host names")
                    return
                }
                for item in items {
                    guard let name = item else {
                        problem("\(at): each entry must be a host name")
                        continue
                    }
                    // HostName admits only letters, digits, '-', '.' and a leading '*': no byte
                    // that could reach a header or a log line as anything else.
                    do {
                        settings.aliases.append(try HostName(parsing: name))
                    } catch {
                        problem("\(at): \"\(name.debugDescription.dropFirst().dropLast())\": \(error)")
                    }
                }
            case "cache-control":
                guard case .scalar(let text) = entry.value else {
                    problem("\(at): must be one line of text, e.g. max-age=300")
                    return
                }
                if let message = ServingOptions.problem(cacheControl: text) {
                    problem("\(at): \(message)")
                    return
                }
                settings.cacheControl = text
            default:
                problem(
                    "unknown key \"\(entry.path)\"\(entry.line.map { " (line \($0))" } ?? ""); site.yaml knows \(keys.joined(separator: ", "))"
                )
            }
        } fail: { failure in
            switch failure {
            case .syntax(let message): problem("not valid YAML: \(message)")
            case .notMapping: problem("must be a mapping of keys (\(keys.joined(separator: ", ")))")
            }
        }
        return (settings, problems)
    }
}
