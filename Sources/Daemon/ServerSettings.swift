package import AASA
package import ACME
package import Foundation
package import HTTPCore
package import HTTPServer
package import Reactor
package import SiteStore
package import TLS

/// The server's settings: `config/aasad.yaml`, then `AASAD_*` environment variables, then flags,
/// each overriding the one before (the order of the twelve-factor app and of most daemons). Every
/// key is declared once in `SettingsSchema.all`; config/aasad.yaml documents each (a test holds
/// the two together).
///
/// Every key is checked: an unknown key, a wrong type or a bad value is an error naming the file
/// and the key, and `aasad validate` reports the same errors without starting anything.
package struct ServerSettings: Equatable, Sendable {
    package var https = [":8443"]
    package var http: [String] = []
    /// Plain HTTP redirects every request (but ACME's HTTP-01) to HTTPS (`HTTPSRedirect`).
    package var httpRedirect = false
    /// The port written in those redirects; nil: the first HTTPS listener's, as bound.
    package var httpsPort: UInt16?
    /// nil: one worker per core.
    package var threads: Int?
    /// nil: no admin listener.
    package var admin: String? = "127.0.0.1:9190"
    /// Host names the admin listener answers besides loopback names and IP literals (a scraper
    /// that asks by DNS name); lower case, no port. Any other `Host` gets 421 (`AdminHosts`).
    package var adminHosts: [String] = []
    package var state = "state"
    package var user: String?
    /// Where the serving process's id is written (`PIDFile`); nil: nowhere.
    package var pidFile: String?
    package var handshakeTimeout = Limits().handshakeTimeout
    package var requestTimeout = Limits().requestTimeout
    package var idleTimeout = Limits().idleTimeout
    package var writeTimeout = Limits().writeTimeout
    package var drainTimeout = Limits().drainTimeout
    /// On SIGTERM, seconds to go on serving with `/readyz` answering 503 before accepting stops
    /// (for load balancers that follow readiness); 0: stop accepting at once.
    package var shutdownDelay: Int64 = 0
    /// Per worker; 0 for none.
    package var maxConnections = 0
    /// KB the fields of all incomplete HTTP/2 requests may hold, the whole process (`RequestBudget`).
    package var incompleteRequestKB = RequestBudget.defaultLimit / 1024
    package var tlsMinimumVersion = TLSVersion.tls12
    package var cacheControl = ServingOptions.defaultCacheControl
    package var logLevel = LogLevel.info
    package var logFormat = OutputFormat.text
    /// nil: no access log; `stdout`, `stderr` or a file path.
    package var accessLog: String?
    package var watch = true
    package var rescanInterval: Int64?
    package var acme = ACMESettings()
    package var cdnWatch = CDNWatchSettings()
    package var api = APISettings()

    package init() {}

    /// The file's name inside the config directory.
    package static let fileName = "aasad.yaml"
    /// Largest aasad.yaml read.
    package static let maximumFileSize = 64 * 1024

    /// A problem with one setting: where it came from and what is wrong.
    package struct Problem: Error, Equatable, CustomStringConvertible {
        /// The file, `environment` or `flag`.
        package var source: String
        /// The key as written: `timeouts.idle`, `AASAD_TIMEOUTS_IDLE`, `--idle-timeout`.
        package var key: String
        package var message: String
        /// Where in the file (1-based line and column), for file problems.
        package var line: Int? = nil
        package var column: Int? = nil

        /// One line, whatever the value held: control bytes a value carried (CR, LF) are shown as
        /// `\xHH` (`TerminalText`), so a bad value cannot forge another line of the report or the log.
        package var description: String { TerminalText.escaped("\(source)\(line.map { ":\($0)" } ?? ""): \(key): \(message)") }

        /// The message alone, escaped the same way (for reports that show the key apart).
        package var escapedMessage: String { TerminalText.escaped(message) }
    }

    /// The settings table (`SettingsSchema.all`).
    private static var keys: [Setting] { SettingsSchema.all }

    /// The last names of the secret settings' keys (`Setting.isSecret`): a broken line holding
    /// one is quoted without its value.
    static let secretNames = Set(SettingsSchema.all.filter(\.isSecret).compactMap { $0.path.split(separator: ".").last.map(String.init) })

    /// Sections of the file and the keys each knows, for error messages.
    private static func known(under prefix: String) -> [String] {
        var names: [String] = []
        for key in keys where key.path.hasPrefix(prefix) {
            let name = String(key.path.dropFirst(prefix.count).prefix { $0 != "." })
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    // MARK: - The file

    /// Reads `aasad.yaml` from a config directory: defaults when there is none.
    /// Only a file that is not there means "defaults": one that cannot be read (EACCES) is an
    /// error, never a silent start on other settings than the operator's.
    package static func load(configDirectory: String) -> (ServerSettings, [Problem]) {
        load(file: configDirectory + "/" + fileName, missingIsDefault: true)
    }

    package static func load(file path: String, missingIsDefault: Bool = false) -> (ServerSettings, [Problem]) {
        switch ConfigLoader.readBounded(path: path, limit: maximumFileSize) {
        case .failure(let error) where error.isMissing && missingIsDefault:
            return (ServerSettings(), [])
        case .failure(let error):
            return (ServerSettings(), [Problem(source: path, key: "(file)", message: "cannot read the file: \(error)")])
        case .success(let bytes) where bytes.count > maximumFileSize:
            // readBounded stops one byte past the bound: never parse a truncated file.
            return (ServerSettings(), [Problem(source: path, key: "(file)", message: "larger than 64 KB")])
        case .success(let bytes):
            var settings = ServerSettings()
            let problems = settings.apply(yaml: String(decoding: bytes, as: UTF8.self), file: path)
            return (settings, problems)
        }
    }

    /// Every problem of a settings file, as `aasad validate` reports them: the file's own (every
    /// key known, every value usable); when it has none, its values together and the files its
    /// `api` section names.
    package static func problems(ofFile path: String) -> [Problem] {
        let (settings, problems) = load(file: path)
        guard problems.isEmpty else { return problems }
        return settings.consistencyProblems(source: path) + settings.api.fileProblems(source: path)
    }

    /// Applies YAML text over these settings; returns the problems, key by key.
    package mutating func apply(yaml text: String, file: String) -> [Problem] {
        var problems: [Problem] = []
        var settings = self
        YAMLKeys.walk(
            text, isSection: { path in Self.keys.contains { $0.path.hasPrefix(path + ".") } }, secrets: Self.secretNames,
            visit: { entry in
                func problem(_ message: String) -> Problem {
                    Problem(source: file, key: entry.path, message: message, line: entry.line, column: entry.column)
                }
                guard let key = Self.keys.first(where: { $0.path == entry.path }) else {
                    let prefix = entry.path.contains(".") ? String(entry.path[...entry.path.lastIndex(of: ".")!]) : ""
                    let section = prefix.isEmpty ? "the file" : String(prefix.dropLast())
                    problems.append(problem("unknown key; \(section) knows \(Self.known(under: prefix).joined(separator: ", "))"))
                    return
                }
                let values: [String]
                switch entry.value {
                case .list(let items) where key.isList:
                    let scalars = items.compactMap { $0 }
                    guard scalars.count == items.count else {
                        problems.append(problem("must be a list of text values"))
                        return
                    }
                    values = scalars
                case .scalar(let scalar):
                    values = [scalar]
                case .list, .other, .table, .mapping:
                    problems.append(problem(key.isList ? "must be a value or a list" : "must be a single value"))
                    return
                }
                if let message = key.apply(&settings, values) { problems.append(problem(message)) }
            },
            fail: { failure in
                // A file or section that is not a mapping: the keys it could hold.
                switch failure {
                case .syntax(let message):
                    problems.append(Problem(source: file, key: "(file)", message: "not valid YAML: \(message)"))
                case .notMapping(let section):
                    let prefix = section.isEmpty ? "" : section + "."
                    problems.append(
                        Problem(
                            source: file, key: section.isEmpty ? "(file)" : section,
                            message: "must be a mapping of keys (\(Self.known(under: prefix).joined(separator: ", ")))"))
                }
            })
        self = settings
        return problems
    }

    // MARK: - The environment

    /// Variables that are not settings: the config directory, the readiness pipe of an upgrade,
    /// and ones tests and tools set.
    package static let otherVariables: Set<String> = [
        "AASAD_CONFIG", "AASAD_UPDATE_GOLDEN", Upgrade.readyVariable, Upgrade.ticketKeysVariable,
        // The tenant API client's (`aasad site`, Sources/aasad/SiteCommand.swift), often set in
        // the same environment as the server's.
        "AASAD_API_TOKEN", "AASAD_API_URL",
        // `aasad check --dal-key`'s (Sources/aasad/CheckCommand.swift); serve's own key is
        // AASAD_CDN_WATCH_GOOGLE_KEY.
        "AASAD_DAL_KEY",
    ]

    /// Applies `AASAD_*` variables over these settings (lists comma-separated). Returns problems
    /// with the variables' values, and, separately, variables that name no setting (a typo
    /// should be seen, but must not stop a server whose environment is shared with other tools).
    package mutating func apply(environment: [String: String]) -> (problems: [Problem], unknown: [String]) {
        var problems: [Problem] = []
        var unknown: [String] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("AASAD_") {
            guard let key = Self.keys.first(where: { $0.environmentName == name }) else {
                if !Self.otherVariables.contains(name) { unknown.append(name) }
                continue
            }
            let values = key.isList ? value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : [value]
            if let message = key.apply(&self, values) { problems.append(Problem(source: "environment", key: name, message: message)) }
        }
        return (problems, unknown)
    }

    /// The variable names, for documentation and `--help`.
    package static var environmentNames: [String] { keys.map(\.environmentName) }

    /// Applies one flag's values through the same checks as the file's key.
    package mutating func apply(flag: String, setting: Setting, _ values: [String]) -> Problem? {
        setting.apply(&self, values).map { Problem(source: "flag", key: flag, message: $0) }
    }

    /// Problems of values set in code rather than read from text (a `Daemon` given settings
    /// directly), through each key's own bounds and checks, so they hold whoever builds the value.
    package func valueProblems(source: String) -> [Problem] {
        Self.keys.compactMap { key in key.check(self).map { Problem(source: source, key: key.path, message: $0) } }
    }

    /// Problems of values together, once every source has applied (`source` names them).
    package func consistencyProblems(source: String) -> [Problem] {
        var problems: [(key: String, message: String)] = []
        if httpRedirect && http.isEmpty {
            problems.append(
                ("listen.http-redirect", "needs a plain HTTP listener to redirect from (listen.http, port 80 as clients see it)"))
        }
        if httpRedirect && https.isEmpty && httpsPort == nil {
            problems.append(("listen.https-port", "must be set when listen.http-redirect is on and listen.https is empty"))
        }
        problems += acme.consistencyProblems(httpListeners: http)
        problems += api.consistencyProblems()
        return problems.map { Problem(source: source, key: $0.key, message: $0.message) }
    }

    // MARK: - Derived values

    package var limits: Limits {
        var limits = Limits()
        limits.handshakeTimeout = handshakeTimeout
        limits.requestTimeout = requestTimeout
        limits.idleTimeout = idleTimeout
        limits.writeTimeout = writeTimeout
        limits.drainTimeout = drainTimeout
        limits.maxConnections = maxConnections
        limits.incompleteRequestBytes = incompleteRequestKB * 1024
        return limits
    }
}
