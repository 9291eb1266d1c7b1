import AASA
import ACME
import Foundation
import HTTPCore
import HTTPServer
import Reactor
import SiteStore
import TLS

/// The server's settings: `config/aasad.yaml`, then `AASAD_*` environment variables, then flags,
/// each overriding the one before (the order of the twelve-factor app and of most daemons):
///
/// ```yaml
/// listen:
///   https: [":8443"]          # one address or a list
///   http: []                  # plain HTTP: for local testing, or to redirect to HTTPS
///   http-redirect: false      # true: plain HTTP answers 301 to the same URL over HTTPS
///   https-port: 443           # the port in those redirects; default: the first https address's
/// threads: auto               # or a number of worker threads
/// admin: 127.0.0.1:9190       # or off
/// admin-hosts: []             # names the admin listener answers besides localhost and IP literals
/// state: state                # where the development certificate is kept
/// user: aasad                 # drop to this user after binding (run as root to bind 443)
/// pid-file: /run/aasad/aasad.pid   # the serving process's id; follows an upgrade (SIGUSR2)
/// timeouts: { handshake: 10, request: 10, idle: 60, write: 30, drain: 10, shutdown-delay: 0 }   # seconds
/// limits: { max-connections: 0, incomplete-request-kb: 32768 }   # max-connections per worker
/// tls: { min-version: "1.2" }      # or "1.3"
/// cache-control: max-age=300
/// logging: { level: info, format: text, access-log: off }   # access-log: off, stdout, stderr or a path
/// watch: { enabled: true, rescan-interval: off }            # rescan-interval: seconds or off
/// acme:                       # automatic certificates (issue 11); off unless directory is set
///   directory: https://acme-v02.api.letsencrypt.org/directory
///   email: ops@example.com
///   directory-ca: path/ca.pem         # roots for the directory's HTTPS; default: the system's
///   storage: state/acme               # default <state>/acme; replicas may share it
///   challenges: [tls-alpn-01, http-01]
///   eab: { kid: …, hmac-key: … }      # External Account Binding, when the CA asks for it
///   dns-hook: /path/to/hook           # DNS-01 for wildcard sites: `hook add|remove NAME VALUE`
///   orders-per-hour: 60
///   names-per-site: 100               # names ordered per site at most, aliases included
/// cdn-watch:                  # Apple's CDN copy of every served host (issue 13); off by default
///   enabled: false
///   url: https://app-site-association.cdn-apple.com/a/v1/
///   interval: 6h                      # per host: s, m, h, d or seconds
///   rate: 2                           # most CDN requests a second, all hosts together
///   ca-file: path/ca.pem              # extra roots for the CDN's HTTPS
/// ```
///
/// Every key is checked: an unknown key, a wrong type or a bad value is an error naming the file
/// and the key, and `aasad validate` reports the same errors without starting anything.
struct ServerSettings: Equatable {
    var https = [":8443"]
    var http: [String] = []
    /// Plain HTTP redirects every request (but ACME's HTTP-01) to HTTPS (`HTTPSRedirect`).
    var httpRedirect = false
    /// The port written in those redirects; nil: the first HTTPS listener's, as bound.
    var httpsPort: UInt16?
    /// nil: one worker per core.
    var threads: Int?
    /// nil: no admin listener.
    var admin: String? = "127.0.0.1:9190"
    /// Host names the admin listener answers besides loopback names and IP literals (a scraper
    /// that asks by DNS name); lower case, no port. Any other `Host` gets 421 (`AdminHosts`).
    var adminHosts: [String] = []
    var state = "state"
    var user: String?
    /// Where the serving process's id is written (`PIDFile`); nil: nowhere.
    var pidFile: String?
    var handshakeTimeout = Limits().handshakeTimeout
    var requestTimeout = Limits().requestTimeout
    var idleTimeout = Limits().idleTimeout
    var writeTimeout = Limits().writeTimeout
    var drainTimeout = Limits().drainTimeout
    /// On SIGTERM, seconds to go on serving with `/readyz` answering 503 before accepting stops
    /// (for load balancers that follow readiness); 0: stop accepting at once.
    var shutdownDelay: Int64 = 0
    /// Per worker; 0 for none.
    var maxConnections = 0
    /// KB the fields of all incomplete HTTP/2 requests may hold, the whole process (`RequestBudget`).
    var incompleteRequestKB = RequestBudget.defaultLimit / 1024
    var tlsMinimumVersion = TLSVersion.tls12
    var cacheControl = ServingOptions.defaultCacheControl
    var logLevel = LogLevel.info
    var logFormat = OutputFormat.text
    /// nil: no access log; `stdout`, `stderr` or a file path.
    var accessLog: String?
    var watch = true
    var rescanInterval: Int64?
    var acme = ACMESettings()
    var cdnWatch = CDNWatchSettings()

    /// The file's name inside the config directory.
    static let fileName = "aasad.yaml"
    /// Largest aasad.yaml read.
    static let maximumFileSize = 64 * 1024

    /// A problem with one setting: where it came from and what is wrong.
    struct Problem: Error, Equatable, CustomStringConvertible {
        /// The file, `environment` or `flag`.
        var source: String
        /// The key as written: `timeouts.idle`, `AASAD_TIMEOUTS_IDLE`, `--idle-timeout`.
        var key: String
        var message: String
        /// Where in the file (1-based line and column), for file problems.
        var line: Int? = nil
        var column: Int? = nil

        /// One line, whatever the value held: control bytes a value carried (CR, LF) are shown as
        /// `\xHH` (`TerminalText`), so a bad value cannot forge another line of the report or the log.
        var description: String { TerminalText.escaped("\(source)\(line.map { ":\($0)" } ?? ""): \(key): \(message)") }

        /// The message alone, escaped the same way (for reports that show the key apart).
        var escapedMessage: String { TerminalText.escaped(message) }
    }

    /// One setting: its key path in the file, and how a textual value applies.
    private struct Key: Sendable {
        let path: String
        let isList: Bool
        let apply: @Sendable (inout ServerSettings, [String]) -> String?

        /// `AASAD_` and the key path in capitals, dots and dashes as underscores.
        var environmentName: String {
            "AASAD_" + path.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
        }
    }

    private static func scalar(_ path: String, _ apply: @escaping @Sendable (inout ServerSettings, String) -> String?) -> Key {
        Key(path: path, isList: false) { settings, values in apply(&settings, values[0]) }
    }

    private static func seconds(_ path: String, _ field: any WritableKeyPath<ServerSettings, Int64> & Sendable) -> Key {
        scalar(path) { settings, text in
            guard let n = Int64(text), n >= 1, n <= 86_400 else { return "must be whole seconds from 1 to 86400, not \"\(text)\"" }
            settings[keyPath: field] = n
            return nil
        }
    }

    /// A key whose value is one of a fixed set (an enum's raw values).
    private static func choice<T: RawRepresentable & CaseIterable & Sendable>(
        _ path: String, _ field: any WritableKeyPath<ServerSettings, T> & Sendable
    ) -> Key where T.RawValue == String {
        scalar(path) { settings, text in
            guard let value = T(rawValue: text) else {
                return "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), not \"\(text)\""
            }
            settings[keyPath: field] = value
            return nil
        }
    }

    private static func addresses(_ path: String, _ field: any WritableKeyPath<ServerSettings, [String]> & Sendable) -> Key {
        Key(path: path, isList: true) { settings, values in
            for value in values {
                if let problem = addressProblem(value) { return problem }
            }
            settings[keyPath: field] = values
            return nil
        }
    }

    private static func addressProblem(_ text: String) -> String? {
        do {
            _ = try SocketAddress(parsing: text)
            return nil
        } catch {
            return "cannot listen on \(error.description)"
        }
    }

    /// A key whose value is a file or directory path.
    private static func path(_ path: String, _ set: @escaping @Sendable (inout ServerSettings, String) -> Void) -> Key {
        scalar(path) { settings, text in
            guard !text.isEmpty, !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return "must be a path" }
            set(&settings, text)
            return nil
        }
    }

    private static func flag(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }

    private static let keys: [Key] = [
        addresses("listen.https", \.https),
        addresses("listen.http", \.http),
        scalar("listen.http-redirect") { settings, text in
            guard let on = flag(text) else { return "must be true or false, not \"\(text)\"" }
            settings.httpRedirect = on
            return nil
        },
        scalar("listen.https-port") { settings, text in
            guard let port = UInt16(text), port >= 1 else { return "must be a port from 1 to 65535, not \"\(text)\"" }
            settings.httpsPort = port
            return nil
        },
        scalar("threads") { settings, text in
            if text == "auto" {
                settings.threads = nil
                return nil
            }
            guard let n = Int(text), n >= 1, n <= 1024 else { return "must be auto or a number from 1 to 1024, not \"\(text)\"" }
            settings.threads = n
            return nil
        },
        scalar("admin") { settings, text in
            if text == "off" {
                settings.admin = nil
                return nil
            }
            if let problem = addressProblem(text) { return problem }
            settings.admin = text
            return nil
        },
        Key(path: "admin-hosts", isList: true) { settings, values in
            var names: [String] = []
            for value in values {
                let name: HostName
                do {
                    name = try HostName(parsing: value)
                } catch {
                    return "\"\(value)\": \(error)"
                }
                guard !name.isWildcard else { return "\"\(value)\": name each host; a wildcard is not taken" }
                names.append(name.name)
            }
            settings.adminHosts = names
            return nil
        },
        scalar("state") { settings, text in
            guard !text.isEmpty else { return "must be a directory path" }
            settings.state = text
            return nil
        },
        scalar("user") { settings, text in
            guard !text.isEmpty else { return "must be a user name" }
            guard getpwnam(text) != nil else { return "no such user \"\(text)\"" }
            settings.user = text
            return nil
        },
        path("pid-file") { $0.pidFile = $1 },
        seconds("timeouts.handshake", \.handshakeTimeout),
        seconds("timeouts.request", \.requestTimeout),
        seconds("timeouts.idle", \.idleTimeout),
        seconds("timeouts.write", \.writeTimeout),
        seconds("timeouts.drain", \.drainTimeout),
        scalar("timeouts.shutdown-delay") { settings, text in
            guard let n = Int64(text), n >= 0, n <= 300 else { return "must be whole seconds from 0 to 300, not \"\(text)\"" }
            settings.shutdownDelay = n
            return nil
        },
        scalar("limits.max-connections") { settings, text in
            guard let n = Int(text), n >= 0, n <= 10_000_000 else {
                return "must be a number of connections (0 for no limit), not \"\(text)\""
            }
            settings.maxConnections = n
            return nil
        },
        scalar("limits.incomplete-request-kb") { settings, text in
            // From one session's budget (64 KB: below it a single client would be refused its
            // own streams) to 1 TB.
            guard let n = Int(text), n >= 64, n <= 1 << 30 else {
                return "must be a number of kilobytes from 64 to 1073741824, not \"\(text)\""
            }
            settings.incompleteRequestKB = n
            return nil
        },
        choice("tls.min-version", \.tlsMinimumVersion),
        // The one check of every Cache-Control source (file, variable, flag), on bytes.
        scalar("cache-control") { settings, text in
            if let problem = ServingOptions.problem(cacheControl: text) { return problem }
            settings.cacheControl = text
            return nil
        },
        choice("logging.level", \.logLevel),
        choice("logging.format", \.logFormat),
        scalar("logging.access-log") { settings, text in
            guard !text.isEmpty else { return "must be off, stdout, stderr or a file path" }
            settings.accessLog = text == "off" ? nil : text
            return nil
        },
        scalar("watch.enabled") { settings, text in
            guard let on = flag(text) else { return "must be true or false, not \"\(text)\"" }
            settings.watch = on
            return nil
        },
        scalar("acme.directory") { settings, text in
            guard (try? ACMEURL(text)) != nil else { return "must be the CA's https directory URL, not \"\(text)\"" }
            settings.acme.directory = text
            return nil
        },
        scalar("acme.email") { settings, text in
            if let problem = ACMESettings.emailProblem(text) { return problem }
            settings.acme.email = text
            return nil
        },
        path("acme.directory-ca") { $0.acme.directoryCA = $1 },
        path("acme.storage") { $0.acme.storage = $1 },
        Key(path: "acme.challenges", isList: true) { settings, values in
            if let problem = ACMESettings.challengesProblem(values) { return problem }
            settings.acme.challenges = values
            return nil
        },
        scalar("acme.eab.kid") { settings, text in
            // RFC 8555 §7.3.4: the CA's key identifier, sent as a JWS header value.
            guard !text.isEmpty, text.utf8.count <= 256, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                return "must be the key identifier the CA gave (printable, no spaces)"
            }
            settings.acme.eabKeyID = text
            return nil
        },
        scalar("acme.eab.hmac-key") { settings, text in
            guard (try? ACMEClient.ExternalAccountBinding(keyID: "k", macKeyBase64URL: text)) != nil else {
                return "must be the base64url MAC key the CA gave"
            }
            settings.acme.eabMACKey = text
            return nil
        },
        path("acme.dns-hook") { $0.acme.dnsHook = $1 },
        scalar("acme.orders-per-hour") { settings, text in
            guard let n = Int(text), n >= 1, n <= 100_000 else { return "must be a number of orders from 1 to 100000, not \"\(text)\"" }
            settings.acme.ordersPerHour = n
            return nil
        },
        scalar("acme.names-per-site") { settings, text in
            let bounds = CertificateManager.Configuration.namesPerSiteBounds
            guard let n = Int(text), bounds.contains(n) else {
                return "must be a number of names from \(bounds.lowerBound) to \(bounds.upperBound), not \"\(text)\""
            }
            settings.acme.namesPerSite = n
            return nil
        },
        scalar("cdn-watch.enabled") { settings, text in
            guard let on = flag(text) else { return "must be true or false, not \"\(text)\"" }
            settings.cdnWatch.enabled = on
            return nil
        },
        scalar("cdn-watch.url") { settings, text in
            if let problem = CDNWatchSettings.urlProblem(text) { return problem }
            settings.cdnWatch.url = text
            return nil
        },
        scalar("cdn-watch.interval") { settings, text in
            guard let seconds = CDNWatchSettings.duration(text) else {
                return "must be a duration from 1s to 7d (e.g. 6h, 30m, 90s), not \"\(text)\""
            }
            settings.cdnWatch.interval = seconds
            return nil
        },
        scalar("cdn-watch.rate") { settings, text in
            guard let rate = Double(text), rate.isFinite, rate >= 0.01, rate <= 20 else {
                return "must be requests a second from 0.01 to 20, not \"\(text)\""
            }
            settings.cdnWatch.rate = rate
            return nil
        },
        path("cdn-watch.ca-file") { $0.cdnWatch.caFile = $1 },
        scalar("watch.rescan-interval") { settings, text in
            if text == "off" {
                settings.rescanInterval = nil
                return nil
            }
            guard let n = Int64(text), n >= 1, n <= 86_400 else { return "must be whole seconds from 1 to 86400, or off, not \"\(text)\"" }
            settings.rescanInterval = n
            return nil
        },
    ]

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
    static func load(configDirectory: String) -> (ServerSettings, [Problem]) {
        load(file: configDirectory + "/" + fileName, missingIsDefault: true)
    }

    static func load(file path: String, missingIsDefault: Bool = false) -> (ServerSettings, [Problem]) {
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

    /// Applies YAML text over these settings; returns the problems, key by key.
    mutating func apply(yaml text: String, file: String) -> [Problem] {
        var problems: [Problem] = []
        var settings = self
        YAMLKeys.walk(
            text, isSection: { path in Self.keys.contains { $0.path.hasPrefix(path + ".") } },
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
                case .list, .other:
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
    static let otherVariables: Set<String> = [
        "AASAD_CONFIG", "AASAD_UPDATE_GOLDEN", Upgrade.readyVariable, Upgrade.ticketKeysVariable,
    ]

    /// Applies `AASAD_*` variables over these settings (lists comma-separated). Returns problems
    /// with the variables' values, and, separately, variables that name no setting (a typo
    /// should be seen, but must not stop a server whose environment is shared with other tools).
    mutating func apply(environment: [String: String]) -> (problems: [Problem], unknown: [String]) {
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
    static var environmentNames: [String] { keys.map(\.environmentName) }

    /// Applies one flag's value through the same checks as the file's key.
    mutating func apply(flag: String, key path: String, _ values: [String]) -> Problem? {
        guard let key = Self.keys.first(where: { $0.path == path }) else { preconditionFailure("no setting \(path)") }
        return key.apply(&self, values).map { Problem(source: "flag", key: flag, message: $0) }
    }

    /// Problems of values together, once every source has applied (`source` names them).
    func consistencyProblems(source: String) -> [Problem] {
        var problems: [(key: String, message: String)] = []
        if httpRedirect && http.isEmpty {
            problems.append(
                ("listen.http-redirect", "needs a plain HTTP listener to redirect from (listen.http, port 80 as clients see it)"))
        }
        if httpRedirect && https.isEmpty && httpsPort == nil {
            problems.append(("listen.https-port", "must be set when listen.http-redirect is on and listen.https is empty"))
        }
        problems += acme.consistencyProblems(httpListeners: http)
        return problems.map { Problem(source: source, key: $0.key, message: $0.message) }
    }

    // MARK: - Derived values

    var limits: Limits {
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
