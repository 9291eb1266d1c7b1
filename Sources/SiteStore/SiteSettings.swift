import Foundation
import Yams

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
        let node: Node?
        do {
            // UTF-8 named: the default would read YAMS_DEFAULT_ENCODING from the environment (a
            // whole environment dictionary per file, 7% of the config fuzzer's time), and the files are UTF-8.
            node = try Yams.compose(yaml: text, .default, .default, .utf8)
        } catch {
            problem("not valid YAML: \(error)")
            return (settings, problems)
        }
        guard let node else { return (settings, problems) }  // an empty file
        guard let mapping = node.mapping else {
            problem("must be a mapping of keys (\(keys.joined(separator: ", ")))")
            return (settings, problems)
        }
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? "\(keyNode)"
            // The key and its line, so that a long file's problem can be found (1-based).
            let at = key + (keyNode.mark.map { " (line \($0.line))" } ?? "")
            switch key {
            case "aliases":
                guard let list = value.sequence else {
                    problem("\(at): must be a list of host names")
                    continue
                }
                for item in list {
                    guard let name = item.scalar?.string else {
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
                guard let text = value.scalar?.string else {
                    problem("\(at): must be one line of text, e.g. max-age=300")
                    continue
                }
                if let message = ServingOptions.problem(cacheControl: text) {
                    problem("\(at): \(message)")
                    continue
                }
                settings.cacheControl = text
            default:
                problem(
                    "unknown key \"\(key)\"\(keyNode.mark.map { " (line \($0.line))" } ?? ""); site.yaml knows \(keys.joined(separator: ", "))"
                )
            }
        }
        return (settings, problems)
    }
}
