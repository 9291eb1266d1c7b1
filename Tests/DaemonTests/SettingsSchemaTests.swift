import Foundation
import Testing

@testable import Daemon

@Suite("The settings schema: one table for the file, variables, flags and the live split")
struct SettingsSchemaTests {
    /// Applies `text` to the key at `path` as the file would; the message when refused.
    private func refusal(_ path: String, _ text: String) -> String? {
        var settings = ServerSettings()
        let problems = settings.apply(
            yaml:
                "\(path.split(separator: ".").enumerated().map { String(repeating: "  ", count: $0.offset) + $0.element + ":" }.joined(separator: "\n")) \(text)\n",
            file: "aasad.yaml")
        return problems.first?.message
    }

    @Test("bounds hold at N and refuse N+1")
    func bounds() {
        #expect(refusal("timeouts.idle", "86400") == nil)
        #expect(refusal("timeouts.idle", "86401") == "must be whole seconds from 1 to 86400, not \"86401\"")
        #expect(refusal("timeouts.idle", "1") == nil)
        #expect(refusal("timeouts.idle", "0") != nil)
        #expect(refusal("timeouts.shutdown-delay", "300") == nil)
        #expect(refusal("timeouts.shutdown-delay", "301") == "must be whole seconds from 0 to 300, not \"301\"")
        #expect(refusal("threads", "1024") == nil)
        #expect(refusal("threads", "1025") == "must be auto or a number from 1 to 1024, not \"1025\"")
        #expect(refusal("limits.incomplete-request-kb", "64") == nil)
        #expect(refusal("limits.incomplete-request-kb", "63") == "must be a number of kilobytes from 64 to 1073741824, not \"63\"")
        #expect(refusal("limits.incomplete-request-kb", "1073741824") == nil)
        #expect(refusal("limits.incomplete-request-kb", "1073741825") != nil)
        #expect(refusal("listen.https-port", "65535") == nil)
        #expect(refusal("listen.https-port", "65536") == "must be a port from 1 to 65535, not \"65536\"")
        #expect(refusal("limits.max-connections", "10000000") == nil)
        #expect(refusal("limits.max-connections", "10000001") != nil)
        #expect(refusal("acme.orders-per-hour", "100000") == nil)
        #expect(refusal("acme.orders-per-hour", "100001") != nil)
        #expect(refusal("cdn-watch.rate", "20") == nil)
        #expect(refusal("cdn-watch.rate", "20.01") != nil)
        // Google's API key: 256 unreserved bytes at most; a refused key is never quoted back.
        #expect(refusal("cdn-watch.google-key", String(repeating: "K", count: 256)) == nil)
        for (yaml, key) in [
            (String(repeating: "K", count: 257), String(repeating: "K", count: 257)), (#""k\r\nX-A: 1""#, "X-A: 1"),
            ("k&x=1", "k&x=1"), (#""k y""#, "k y"),
        ] {
            let message = refusal("cdn-watch.google-key", yaml)
            #expect(
                message?.hasPrefix("must be 1 to 256 bytes") == true && message?.contains(key) == false, "\(String(describing: message))")
        }
        // A number far past every bound, and one past Int64, never trap.
        #expect(refusal("timeouts.idle", "99999999999999999999999") != nil)
        #expect(refusal("threads", "-1") != nil)
    }

    @Test("a YAML syntax error on a line holding a secret (google-key, hmac-key) quotes the line without the value")
    func secretsNeverQuoted() {
        #expect(ServerSettings.secretNames == ["google-key", "hmac-key"])
        let cases = [
            ("cdn-watch:\n  google-key: AIzaSyD-SECRET: x\n", "AIzaSyD-SECRET", 2),
            ("cdn-watch: {google-key: AIzaSyD-SECRET: x}\n", "AIzaSyD-SECRET", 1),
            ("acme:\n  eab:\n    \"hmac-key\" : SECRETMAC-abc: x\n", "SECRETMAC-abc", 3),
            // The value on the lines below its key, broken there.
            ("acme:\n  eab:\n    hmac-key:\n      SECRETMAC-abc: x: y\n", "SECRETMAC-abc", 4),
        ]
        for (yaml, secret, line) in cases {
            var settings = ServerSettings()
            let message = settings.apply(yaml: yaml, file: "aasad.yaml").first?.message ?? ""
            #expect(message.contains("line \(line), column "), "\(message)")
            #expect(!message.contains(secret) && message.contains("<hidden>"), "\(message)")
        }
        // Other keys' lines are quoted whole; a secret key's name followed by a colon anywhere hides
        // what follows it (a flow mapping, or a value that only looks like one: safe either way).
        var settings = ServerSettings()
        let message = settings.apply(yaml: "cdn-watch:\n  url: https://x/google-key: y\n", file: "aasad.yaml").first?.message ?? ""
        #expect(message.contains("google-key:") && message.contains("<hidden>"), "\(message)")
        let other = settings.apply(yaml: "cdn-watch:\n  url: https://x/a: y\n", file: "aasad.yaml").first?.message ?? ""
        #expect(other.contains("https://x/a: y"), "\(other)")
    }

    @Test("the settings holding the Google key print without it: description, debugDescription, dump")
    func keyNotDescribed() {
        var settings = ServerSettings()
        #expect(
            settings.apply(environment: ["AASAD_CDN_WATCH_GOOGLE_KEY": "AIzaSECRETkey", "AASAD_CDN_WATCH_GOOGLE": "true"]).problems.isEmpty)
        var dumped = ""
        dump(settings.cdnWatch, to: &dumped)
        var dumpedWatch = ""
        dump(settings.cdnWatch.watchSettings, to: &dumpedWatch)
        for text in [
            "\(settings.cdnWatch)", String(reflecting: settings.cdnWatch), dumped, "\(settings.cdnWatch.watchSettings)",
            String(reflecting: settings.cdnWatch.watchSettings), dumpedWatch, "\(settings)",
        ] {
            #expect(!text.contains("SECRET"), "\(text)")
        }
        #expect("\(settings.cdnWatch)".contains("<hidden>"))
    }

    @Test("AASAD_DAL_KEY (aasad check's) is no unknown variable to serve")
    func checkVariableKnown() {
        var settings = ServerSettings()
        #expect(settings.apply(environment: ["AASAD_DAL_KEY": "k"]).unknown.isEmpty)
        #expect(settings.apply(environment: ["AASAD_DAL_KEYS": "k"]).unknown == ["AASAD_DAL_KEYS"])
    }

    @Test("a parsed value lands in its field")
    func parses() {
        var settings = ServerSettings()
        #expect(
            settings.apply(yaml: "timeouts: {idle: 5}\nlimits: {incomplete-request-kb: 64}\nwatch: {rescan-interval: 9}\n", file: "f")
                .isEmpty)
        #expect(settings.idleTimeout == 5)
        #expect(settings.limits.incompleteRequestBytes == 64 * 1024)
        #expect(settings.rescanInterval == 9)
    }

    @Test("values set in code are held to the text's checks; absent optionals pass")
    func typedValues() {
        #expect(ServerSettings().valueProblems(source: "settings").isEmpty)
        var settings = ServerSettings()
        settings.idleTimeout = 86_401
        settings.httpsPort = 0
        settings.threads = 1025
        settings.https = ["nowhere"]
        settings.acme.ordersPerHour = 0
        settings.cdnWatch.rate = .infinity
        #expect(
            settings.valueProblems(source: "settings").map(\.key) == [
                "listen.https", "listen.https-port", "threads", "timeouts.idle", "acme.orders-per-hour", "cdn-watch.rate",
            ])
        settings = ServerSettings()
        settings.idleTimeout = 86_400
        settings.threads = 1024
        settings.httpsPort = 1
        settings.admin = nil
        #expect(settings.valueProblems(source: "settings").isEmpty)
    }

    @Test("every key has help, a unique variable and, when it has one, a unique flag")
    func names() {
        let all = SettingsSchema.all
        #expect(Set(all.map(\.path)).count == all.count)
        #expect(Set(all.map(\.environmentName)).count == all.count)
        let flags = all.compactMap(\.flag)
        #expect(Set(flags).count == flags.count)
        for setting in all {
            #expect(!setting.help.isEmpty && !setting.help.hasSuffix("."), "\(setting.path): help \(setting.help.debugDescription)")
            #expect(setting.environmentName.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }, "\(setting.environmentName)")
        }
        #expect(SettingsSchema.setting("timeouts.idle")?.environmentName == "AASAD_TIMEOUTS_IDLE")
        #expect(SettingsSchema.setting("limits.incomplete-request-kb")?.environmentName == "AASAD_LIMITS_INCOMPLETE_REQUEST_KB")
        // Each flag the CLI has always had keeps its spelling.
        for flag in [
            "https", "http", "http-redirect", "https-port", "threads", "state", "user", "pid-file", "cache-control", "handshake-timeout",
            "request-timeout", "idle-timeout", "write-timeout", "drain-timeout", "shutdown-delay", "max-connections", "tls-min-version",
            "admin", "rescan-interval", "watch", "log-level", "log-format", "access-log", "incomplete-request-kb",
        ] {
            #expect(flags.contains(flag), "--\(flag)")
        }
    }

    @Test("the live and new-process split comes from the table")
    func liveSplit() {
        let old = ServerSettings()
        var new = old
        new.https = ["127.0.0.1:1"]
        new.idleTimeout = 5
        new.incompleteRequestKB = 64
        new.acme.directory = "https://ca.test/dir"
        #expect(
            SettingsFollower.restartOnly(old, new) == [
                "listen.https", "limits.incomplete-request-kb", "acme turned on or off (acme.directory set or removed)",
            ])
        let applied = SettingsFollower.live(new, keeping: old)
        #expect(applied.https == old.https && applied.incompleteRequestKB == old.incompleteRequestKB && applied.acme == old.acme)
        #expect(applied.idleTimeout == 5)
        for path in ["listen.https", "threads", "user", "state", "tls.min-version", "watch.enabled"] {
            #expect(SettingsSchema.setting(path)?.applies == .newProcess, "\(path)")
        }
        for path in ["timeouts.idle", "cache-control", "logging.level", "admin-hosts", "cdn-watch.enabled"] {
            #expect(SettingsSchema.setting(path)?.applies == .live, "\(path)")
        }
    }

    @Test("every live key is one Daemon.apply applies (a key marked live but applied by nothing would be reported applied)")
    func liveKeysAreApplied() {
        // What `Daemon.apply` (Sources/Daemon/Daemon+Live.swift) changes while serving, and
        // `timeouts.shutdown-delay`, which `Daemon.stop` reads from the settings in force. A new
        // live key goes here once it is applied there; else it is `applies: .newProcess`.
        let applied: Set<String> = [
            "cache-control", "timeouts.handshake", "timeouts.request", "timeouts.idle", "timeouts.write", "timeouts.drain",
            "timeouts.shutdown-delay", "limits.max-connections", "admin-hosts", "logging.level", "logging.format",
            "logging.access-log", "acme.email", "acme.directory-ca", "acme.storage", "acme.challenges", "acme.eab.kid",
            "acme.eab.hmac-key", "acme.dns-hook", "acme.orders-per-hour", "acme.names-per-site", "cdn-watch.enabled",
            "cdn-watch.url", "cdn-watch.interval", "cdn-watch.rate", "cdn-watch.ca-file", "cdn-watch.google", "cdn-watch.google-url",
            "cdn-watch.google-key",
        ]
        let live = Set(SettingsSchema.all.filter { $0.applies == .live }.map(\.path))
        #expect(live.subtracting(applied).isEmpty, "live, applied by nothing: \(live.subtracting(applied).sorted())")
        #expect(applied.subtracting(live).isEmpty, "not live: \(applied.subtracting(live).sorted())")
    }

    @Test("the shipped config/aasad.yaml documents every key of the schema, and no other")
    func documented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/aasad.yaml"), encoding: .utf8)
        let documented = Set(DocumentedKeys.paths(in: text))
        let declared = Set(SettingsSchema.all.map(\.path))
        #expect(
            declared.subtracting(documented).isEmpty,
            "in the schema, not in config/aasad.yaml: \(declared.subtracting(documented).sorted())")
        #expect(
            documented.subtracting(declared).isEmpty,
            "in config/aasad.yaml, not in the schema: \(documented.subtracting(declared).sorted())")
        // The file says the values it writes out are the defaults: read, they change nothing.
        var read = ServerSettings()
        #expect(read.apply(yaml: text, file: "config/aasad.yaml").isEmpty)
        for setting in SettingsSchema.all {
            #expect(setting.show(read) == setting.show(ServerSettings()), "config/aasad.yaml writes \(setting.path) other than its default")
        }
    }

    @Test("the documented-keys reader sees commented keys, sections and flow mappings")
    func documentedReader() {
        let text = """
            # Prose, with a colon: here
            listen:
              https: []
              # https-port: 443
            # acme:
            #   eab: {kid: "k", hmac-key: "m"}
            state: s
            """
        #expect(DocumentedKeys.paths(in: text) == ["listen.https", "listen.https-port", "acme.eab.kid", "acme.eab.hmac-key", "state"])
    }
}

/// The key paths a commented YAML file documents: keys set or commented out (`# key: value`),
/// nested by indentation, and the keys of a one-line `{a: …, b: …}` mapping.
enum DocumentedKeys {
    static func paths(in text: String) -> [String] {
        var paths: [String] = []
        var stack: [(indent: Int, key: String)] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: true) {
            var line = Substring(raw)
            let leading = line.prefix { $0 == " " }.count
            line = line.dropFirst(leading)
            if line.hasPrefix("# ") { line = line.dropFirst(2) } else if line.hasPrefix("#") { continue }
            let inner = line.prefix { $0 == " " }.count
            let indent = leading + inner
            line = line.dropFirst(inner)
            guard let colon = line.firstIndex(of: ":"),
                line[..<colon].allSatisfy({ ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" }),
                !line[..<colon].isEmpty
            else { continue }
            let key = String(line[..<colon])
            let rest = line[line.index(after: colon)...].drop { $0 == " " }
            while let last = stack.last, last.indent >= indent { stack.removeLast() }
            let path = (stack.map(\.key) + [key]).joined(separator: ".")
            if rest.isEmpty || rest.hasPrefix("#") {
                stack.append((indent, key))
            } else if rest.hasPrefix("{"), let close = rest.firstIndex(of: "}") {
                for part in rest[rest.index(after: rest.startIndex)..<close].split(separator: ",") {
                    let name = part.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                    if !name.isEmpty { paths.append(path + "." + name) }
                }
            } else {
                paths.append(path)
            }
        }
        return paths
    }
}

@Suite("serve's settings flags, read from the schema")
struct SettingsFlagsTests {
    /// The settings after `arguments`, or the first problem's text.
    private func apply(_ arguments: [String]) -> (ServerSettings, String?) {
        var settings = ServerSettings()
        do {
            for flag in try SettingsFlags.parse(arguments) {
                if let problem = settings.apply(flag: "--" + flag.name, setting: flag.setting, flag.values) {
                    return (settings, "\(problem.key): \(problem.message)")
                }
            }
        } catch {
            return (settings, error.message)
        }
        return (settings, nil)
    }

    @Test("values, repeats, switches and their negations")
    func values() {
        let (settings, problem) = apply([
            "--https", "127.0.0.1:1", "--https=127.0.0.1:2", "--idle-timeout", "5", "--idle-timeout", "6", "--no-watch", "--http-redirect",
        ])
        #expect(problem == nil)
        #expect(settings.https == ["127.0.0.1:1", "127.0.0.1:2"])
        #expect(settings.idleTimeout == 6 && !settings.watch && settings.httpRedirect)
    }

    @Test("a malformed flag's message shows control bytes escaped, never raw")
    func escapedRefusals() {
        #expect(apply(["--foo\nbar"]).1 == "Unknown option '--foo\\x0Abar'")
        #expect(apply(["--\u{1B}[31m=x"]).1 == "Unknown option '--\\x1B[31m'")
        #expect(apply(["\u{1B}[31mred"]).1 == "Unexpected argument '\\x1B[31mred'")
        #expect(apply(["--no-\r"]).1 == "Unknown option '--no-\\x0D'")
    }

    @Test("malformed flags get ArgumentParser's messages; values the setting's")
    func refusals() {
        #expect(apply(["--bogus"]).1 == "Unknown option '--bogus'")
        #expect(apply(["--https"]).1 == "Missing value for '--https <https>'")
        #expect(apply(["--https", "--http", "x"]).1 == "Missing value for '--https <https>'")
        #expect(apply(["stray"]).1 == "Unexpected argument 'stray'")
        #expect(apply(["--watch=yes"]).1 == "The option '--watch' does not take a value")
        #expect(apply(["--no-threads"]).1 == "Unknown option '--no-threads'")
        #expect(apply(["--idle-timeout", "86400"]).1 == nil)
        #expect(apply(["--idle-timeout", "86401"]).1 == "--idle-timeout: must be whole seconds from 1 to 86400, not \"86401\"")
        #expect(apply(["--idle-timeout", "5\r\nX: y"]).1?.hasPrefix("--idle-timeout: must be whole seconds") == true)
        #expect(apply(["--incomplete-request-kb", "64"]).0.incompleteRequestKB == 64)
        #expect(
            apply(["--incomplete-request-kb", "63"]).1
                == "--incomplete-request-kb: must be a number of kilobytes from 64 to 1073741824, not \"63\"")
    }
}
