package import ACME
import Check
package import Foundation
package import HTTPServer
package import Reactor
package import SiteStore
package import TLS

/// One setting of aasad.yaml, declared once: its key path, its parser and bounds (whose messages
/// `aasad validate`, `serve` and the live follower all print), its `AASAD_*` variable (derived
/// from the path), its `serve` flag, help text, and whether a change applies while serving or
/// needs a new process. `SettingsSchema.all` is the one table; adding a setting is one entry there
/// (and a field of `ServerSettings` when the setting is new).
package struct Setting: Sendable {
    /// Whether a changed value applies to a running server.
    package enum Applies: Sendable, Equatable {
        /// Applied by the follower at the next change of aasad.yaml (or `Daemon.apply`).
        case live
        /// Needs listeners, threads, a user or a budget made at start: reported, and applied by
        /// an in-place upgrade (SIGUSR2) or a restart.
        case newProcess
    }

    /// How the `serve` flag shows the default after the help text.
    package enum Shown: Sendable, Equatable {
        /// The default value, as the file would write it.
        case value
        /// These words instead (`one per core`).
        case text(String)
        /// No default shown.
        case none
    }

    /// The key path in the file: `timeouts.idle`.
    package let path: String
    package let isList: Bool
    /// The `serve` flag's name without dashes; nil: the setting has no flag.
    package let flag: String?
    /// For the flag's help: the values it takes, listed after the text.
    package let flagValues: [String]?
    /// One sentence for `serve --help` (the default is appended).
    package let help: String
    package let shown: Shown
    package let applies: Applies
    /// How the live follower names the key when a change waits for a new process.
    package let reported: String
    /// Whether the value is a true/false switch (the flag is `--name/--no-name`).
    package let isSwitch: Bool
    /// Whether the value is a secret (a key): never quoted in a message, not even the YAML
    /// parser's quote of a broken line (`YAMLKeys.quotedLine`).
    package let isSecret: Bool
    /// Checks textual values (one, or a list's items) and sets the field; a message when refused.
    let apply: @Sendable (inout ServerSettings, [String]) -> String?
    /// Sets the field of the first settings to the second's (the value in force kept).
    let keep: @Sendable (inout ServerSettings, ServerSettings) -> Void
    /// The field as the file would write it.
    let show: @Sendable (ServerSettings) -> String
    /// Checks the field's typed value (set in code, not read from text) as its text would be
    /// checked; a message when refused. An absent optional is the key not set: nothing to check.
    let check: @Sendable (ServerSettings) -> String?

    /// `AASAD_` and the key path in capitals, dots and dashes as underscores.
    package var environmentName: String {
        "AASAD_" + path.uppercased().replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "_")
    }

    /// The default as `serve --help` shows it; nil: none.
    package var shownDefault: String? {
        switch shown {
        case .value: show(ServerSettings())
        case .text(let words): words
        case .none: nil
        }
    }

    init<V: Equatable & Sendable>(
        _ path: String, _ field: any WritableKeyPath<ServerSettings, V> & Sendable, _ value: SettingValue<V>, flag: String? = nil,
        help: String, shown: Shown = .value, applies: Applies = .live, reported: String? = nil, secret: Bool = false,
        keep: (@Sendable (inout ServerSettings, ServerSettings) -> Void)? = nil
    ) {
        self.isSecret = secret
        self.path = path
        self.isList = value.isList
        self.flag = flag
        self.flagValues = value.listedValues
        self.help = help
        self.shown = shown
        self.applies = applies
        self.reported = reported ?? path
        self.isSwitch = V.self == Bool.self
        let parse = value.parse
        apply = { settings, texts in
            switch parse(texts) {
            case .success(let parsed):
                settings[keyPath: field] = parsed
                return nil
            case .failure(let refusal):
                return refusal.message
            }
        }
        self.keep = keep ?? { $0[keyPath: field] = $1[keyPath: field] }
        let render = value.show
        show = { render($0[keyPath: field]) }
        let isList = value.isList
        check = { settings in
            let typed = settings[keyPath: field]
            let mirror = Mirror(reflecting: typed)
            if mirror.displayStyle == .optional && mirror.children.isEmpty { return nil }
            let texts = isList ? (typed as? [String] ?? []) : [render(typed)]
            if case .failure(let refusal) = parse(texts) { return refusal.message }
            return nil
        }
    }
}

/// Bounds of the settings, each with its reason.
package enum SettingsBounds {
    /// A timeout of a day at most: longer is a stuck client kept, never a slow one served.
    package static let seconds: ClosedRange<Int64> = 1...86_400
    /// Five minutes: longer than any load balancer's health-check interval times its threshold.
    package static let shutdownDelay: ClosedRange<Int64> = 0...300
    /// Worker threads: one per core on the largest machines, well below the process's limits.
    package static let threads: ClosedRange<Int> = 1...1024
    /// Connections per worker: beyond ten million, descriptors run out long before.
    package static let maxConnections: ClosedRange<Int> = 0...10_000_000
    /// From one HTTP/2 session's budget (64 KB: below it a single client would be refused its
    /// own streams) to 1 TB.
    package static let incompleteRequestKB: ClosedRange<Int> = 64...(1 << 30)
    /// Orders an hour, all replicas: far above any CA's rate limit, so a typo cannot flood one.
    package static let ordersPerHour: ClosedRange<Int> = 1...100_000
    /// The key identifier an External Account Binding sends (RFC 8555 §7.3.4): a JWS header value.
    package static let eabKeyIDBytes = 256
}

/// The settings table and the checks its entries share.
package enum SettingsSchema {
    static func addressProblem(_ text: String) -> String? {
        do {
            _ = try SocketAddress(parsing: text)
            return nil
        } catch {
            return "cannot listen on \(error.description)"
        }
    }

    static func pathProblem(_ text: String) -> String? {
        guard !text.isEmpty, !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return "must be a path" }
        return nil
    }

    /// Every setting. The order is `serve --help`'s and that of the keys a section lists in an
    /// error.
    package static let all: [Setting] = [
        Setting(
            "listen.https", \.https, .addresses, flag: "https",
            help: "An HTTPS address to listen on, e.g. :443 or 127.0.0.1:8443", applies: .newProcess),
        Setting(
            "listen.http", \.http, .addresses, flag: "http",
            help: "A plain HTTP address to listen on, for local testing or with --http-redirect", applies: .newProcess),
        Setting(
            "listen.http-redirect", \.httpRedirect, .bool, flag: "http-redirect",
            help: "Answer every plain HTTP request (but ACME's HTTP-01) with a redirect to the same URL over HTTPS",
            applies: .newProcess),
        Setting(
            "listen.https-port", \.httpsPort,
            .scalar(
                { text in
                    guard let port = UInt16(text), port >= 1 else {
                        return .failure(Refusal("must be a port from 1 to 65535, not \"\(text)\""))
                    }
                    return .success(port)
                }, show: { $0.map { "\($0)" } ?? "none" }), flag: "https-port",
            help: "The HTTPS port written in those redirects, as clients reach it", shown: .text("the first --https address's port"),
            applies: .newProcess),
        Setting(
            "threads", \.threads,
            .scalar(
                { text in
                    if text == "auto" { return .success(nil) }
                    let bounds = SettingsBounds.threads
                    guard let n = Int(text), bounds.contains(n) else {
                        return .failure(
                            Refusal("must be auto or a number from \(bounds.lowerBound) to \(bounds.upperBound), not \"\(text)\""))
                    }
                    return .success(n)
                }, show: { $0.map { "\($0)" } ?? "auto" }), flag: "threads",
            help: "Worker threads, each with its own event loop", shown: .text("one per core"), applies: .newProcess),
        Setting(
            "state", \.state, .text { $0.isEmpty ? "must be a directory path" : nil }, flag: "state",
            help: "Where the development certificate is kept", applies: .newProcess),
        Setting(
            "user", \.user,
            .optionalText { text in
                guard !text.isEmpty else { return "must be a user name" }
                guard getpwnam(text) != nil else { return "no such user \"\(text)\"" }
                return nil
            }, flag: "user", help: "After binding, run as this user (and its group): start as root to bind 443", shown: .none,
            applies: .newProcess, reported: "user (a restart only: an upgraded process starts as the user already)"),
        Setting(
            "pid-file", \.pidFile, .path, flag: "pid-file",
            help: "Write the serving process's id to this file; an upgrade (SIGUSR2) hands it to the new process",
            applies: .newProcess),
        // The one check of every Cache-Control source (file, variable, flag), on bytes.
        Setting(
            "cache-control", \.cacheControl, .text { ServingOptions.problem(cacheControl: $0) }, flag: "cache-control",
            help: "Cache-Control of served files"),
        Setting(
            "timeouts.handshake", \.handshakeTimeout, .seconds(SettingsBounds.seconds), flag: "handshake-timeout",
            help: "Seconds a TLS handshake may take"),
        Setting(
            "timeouts.request", \.requestTimeout, .seconds(SettingsBounds.seconds), flag: "request-timeout",
            help: "Seconds a request head may take once begun"),
        Setting(
            "timeouts.idle", \.idleTimeout, .seconds(SettingsBounds.seconds), flag: "idle-timeout",
            help: "Seconds an idle keep-alive connection is kept"),
        Setting(
            "timeouts.write", \.writeTimeout, .seconds(SettingsBounds.seconds), flag: "write-timeout",
            help: "Seconds a client may take to read a pending response"),
        Setting(
            "timeouts.drain", \.drainTimeout, .seconds(SettingsBounds.seconds), flag: "drain-timeout",
            help: "On SIGTERM/SIGINT, seconds open connections get to finish"),
        Setting(
            "timeouts.shutdown-delay", \.shutdownDelay, .seconds(SettingsBounds.shutdownDelay), flag: "shutdown-delay",
            help:
                "On SIGTERM/SIGINT, seconds to go on serving with /readyz answering 503 before accepting stops, for load balancers that follow readiness"
        ),
        Setting(
            "limits.max-connections", \.maxConnections,
            .count(SettingsBounds.maxConnections, "connections", message: "a number of connections (0 for no limit)"),
            flag: "max-connections", help: "Connections one worker keeps open at most; 0 for no limit"),
        // One budget shared by the workers, made at start (`RequestBudget`).
        Setting(
            "limits.incomplete-request-kb", \.incompleteRequestKB, .count(SettingsBounds.incompleteRequestKB, "kilobytes"),
            flag: "incomplete-request-kb",
            help: "Kilobytes the fields of all incomplete HTTP/2 requests may hold, the whole process", applies: .newProcess),
        Setting(
            "tls.min-version", \.tlsMinimumVersion, .choice(), flag: "tls-min-version",
            help: "The oldest TLS version accepted: 1.2 or 1.3", applies: .newProcess),
        Setting(
            "admin", \.admin, .optionalText(offIsNone: true, addressProblem), flag: "admin",
            help: "The admin listener (plain HTTP: /healthz, /readyz, /metrics, /sites), or off", applies: .newProcess),
        Setting(
            "admin-hosts", \.adminHosts,
            .list { values in
                var names: [String] = []
                for value in values {
                    let name: HostName
                    do {
                        name = try HostName(parsing: value)
                    } catch {
                        return .failure(Refusal("\"\(value)\": \(error)"))
                    }
                    guard !name.isWildcard else { return .failure(Refusal("\"\(value)\": name each host; a wildcard is not taken")) }
                    names.append(name.name)
                }
                return .success(names)
            },
            help: "Host names the admin listener answers besides localhost and IP literals"),
        Setting(
            "watch.rescan-interval", \.rescanInterval, .secondsOrOff(SettingsBounds.seconds), flag: "rescan-interval",
            help: "Seconds between full rescans of the config directory, for filesystems where inotify is silent",
            shown: .text("none"), applies: .newProcess),
        Setting(
            "watch.enabled", \.watch, .bool, flag: "watch",
            help: "Follow the config directory with inotify and apply changes as they happen", applies: .newProcess),
        Setting("logging.level", \.logLevel, .choice(listed: true), flag: "log-level", help: "Log level"),
        Setting(
            "logging.format", \.logFormat, .choice(listed: true), flag: "log-format",
            help: "Log format: text (one line per event) or json (one object per line)"),
        Setting(
            "logging.access-log", \.accessLog,
            .optionalText(offIsNone: true) { $0.isEmpty ? "must be off, stdout, stderr or a file path" : nil }, flag: "access-log",
            help: "Access log: off, stdout, stderr or a file path, reopened on SIGHUP"),
        // Turning automatic certificates on or off needs a new process; the other acme keys, and
        // a new directory, replace the manager while serving.
        Setting(
            "acme.directory", \.acme.directory,
            .optionalText { text in (try? ACMEURL(text)) == nil ? "must be the CA's https directory URL, not \"\(text)\"" : nil },
            help: "The CA's ACME directory URL; automatic certificates are off without it", applies: .newProcess,
            reported: "acme turned on or off (acme.directory set or removed)",
            keep: { if ($0.acme.directory == nil) != ($1.acme.directory == nil) { $0.acme = $1.acme } }),
        Setting("acme.email", \.acme.email, .optionalText(ACMESettings.emailProblem), help: "The ACME account's contact"),
        Setting("acme.directory-ca", \.acme.directoryCA, .path, help: "Roots trusted for the directory's HTTPS"),
        Setting("acme.storage", \.acme.storage, .path, help: "Where certificates and locks are kept; replicas may share it"),
        Setting(
            "acme.challenges", \.acme.challenges,
            .list { ACMESettings.challengesProblem($0).map { .failure(Refusal($0)) } ?? .success($0) },
            help: "The challenges answered, in order of preference"),
        Setting(
            "acme.eab.kid", \.acme.eabKeyID,
            .optionalText { text in
                guard !text.isEmpty, text.utf8.count <= SettingsBounds.eabKeyIDBytes, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
                else { return "must be the key identifier the CA gave (printable, no spaces)" }
                return nil
            }, help: "The External Account Binding's key identifier"),
        Setting(
            "acme.eab.hmac-key", \.acme.eabMACKey,
            .optionalText { text in
                (try? ACMEClient.ExternalAccountBinding(keyID: "k", macKeyBase64URL: text)) == nil
                    ? "must be the base64url MAC key the CA gave" : nil
            }, help: "The External Account Binding's MAC key", secret: true),
        Setting("acme.dns-hook", \.acme.dnsHook, .path, help: "The program DNS-01 calls for wildcard sites"),
        Setting(
            "acme.orders-per-hour", \.acme.ordersPerHour, .count(SettingsBounds.ordersPerHour, "orders"),
            help: "Orders an hour, shared by every replica"),
        Setting(
            "acme.names-per-site", \.acme.namesPerSite, .count(CertificateManager.Configuration.namesPerSiteBounds, "names"),
            help: "Names ordered per site at most, aliases included"),
        Setting(
            "acme.ask", \.acme.ask, .optionalText(ChildAsk.problem),
            help: "Whether a wildcard site's child name may have a certificate: GET URL?domain=NAME (200: yes), or a program (exit 0: yes)",
            applies: .newProcess),
        Setting(
            "acme.wildcard-certificates", \.acme.wildcardCertificates, .choice(listed: true),
            help: "Wildcard sites: one wildcard certificate (DNS-01), or per-name: a certificate per child name at its first handshake",
            applies: .newProcess),
        Setting("cdn-watch.enabled", \.cdnWatch.enabled, .bool, help: "Compare Apple's CDN copy of every served host"),
        Setting("cdn-watch.url", \.cdnWatch.url, .text(CDNWatchSettings.urlProblem), help: "The CDN's URL; the host is appended"),
        Setting(
            "cdn-watch.interval", \.cdnWatch.interval,
            .scalar(
                { text in
                    CDNWatchSettings.duration(text).map { .success($0) }
                        ?? .failure(Refusal("must be a duration from 1s to 7d (e.g. 6h, 30m, 90s), not \"\(text)\""))
                }, show: { "\($0)" }), help: "Per host: s, m, h, d or seconds"),
        Setting(
            "cdn-watch.rate", \.cdnWatch.rate,
            .scalar(
                { text in
                    guard let rate = Double(text), rate.isFinite, CDNWatchSettings.rateBounds.contains(rate) else {
                        return .failure(Refusal("must be requests a second from 0.01 to 20, not \"\(text)\""))
                    }
                    return .success(rate)
                }, show: { "\($0)" }), help: "Most CDN requests a second, all hosts together"),
        Setting("cdn-watch.ca-file", \.cdnWatch.caFile, .path, help: "Extra roots for the CDN's HTTPS"),
        Setting(
            "cdn-watch.google", \.cdnWatch.google, .bool,
            help: "Compare what Google's Digital Asset Links API lists for every host serving an assetlinks.json"),
        Setting(
            "cdn-watch.google-url", \.cdnWatch.googleURL, .text(DALProbe.urlProblem),
            help: "The Digital Asset Links API's statements:list URL; the query is appended"),
        Setting(
            "cdn-watch.google-key", \.cdnWatch.googleKey, .optionalText(DALProbe.keyProblem),
            help: "A Google API key for that API, sent as key=; never logged or shown", secret: true),
        // The tenant API (docs/api.md): its own listener, made at start.
        Setting(
            "api.listen", \.api.listen, .optionalText(offIsNone: true, addressProblem), flag: "api-listen",
            help: "The tenant API's address (HTTPS unless loopback), or off", applies: .newProcess),
        Setting(
            "api.tokens-file", \.api.tokensFile, .path, flag: "api-tokens-file",
            help: "The API's tokens (SHA-256, scope, host patterns), read again when it changes", applies: .newProcess),
        Setting(
            "api.tls-certificate", \.api.tlsCertificate, .path, flag: "api-tls-certificate",
            help: "The API listener's certificate chain (PEM)", applies: .newProcess),
        Setting(
            "api.tls-key", \.api.tlsKey, .path, flag: "api-tls-key", help: "The API listener's private key (PEM)", applies: .newProcess),
        Setting(
            "api.read-only", \.api.readOnly, .bool, flag: "api-read-only",
            help: "Refuse the API's writes (405): another tool, such as git-sync, owns the config directory", applies: .newProcess),
        Setting(
            "api.requests-per-minute", \.api.requestsPerMinute, .count(APISettings.requestsPerMinuteBounds, "requests"),
            flag: "api-requests-per-minute", help: "The API's requests per token per minute", applies: .newProcess),
        Setting(
            "api.verify-port", \.api.verifyPort, .count(APISettings.verifyPortBounds, "port"), flag: "api-verify-port",
            help: "The port the ownership check fetches a name's /.well-known/aasad-verify/ on", applies: .newProcess),
        Setting(
            "api.verify-private-addresses", \.api.verifyPrivateAddresses, .bool, flag: "api-verify-private-addresses",
            help: "Let the ownership check pass for names on loopback or private addresses (a private CA, split-horizon DNS)",
            applies: .newProcess),
    ]

    /// The setting at a key path.
    package static func setting(_ path: String) -> Setting? { all.first { $0.path == path } }

    /// Settings that have a `serve` flag, in table order.
    package static var flags: [Setting] { all.filter { $0.flag != nil } }
}
