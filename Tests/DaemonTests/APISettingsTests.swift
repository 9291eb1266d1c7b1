import Foundation
import TenantAPI
import Testing

@testable import Daemon

/// The tenant API's settings (`api:` in aasad.yaml, `AASAD_API_*`, `--api-*`).
@Suite struct APISettingsTests {
    @Test func theSectionIsReadFromEverySource() {
        var settings = ServerSettings()
        #expect(settings.api.listen == nil)
        let problems = settings.apply(
            yaml: "api:\n  listen: 127.0.0.1:8444\n  tokens-file: /etc/aasad/tokens.yaml\n  read-only: true\n  requests-per-minute: 60\n",
            file: "aasad.yaml")
        #expect(problems.isEmpty)
        #expect(settings.api.listen == "127.0.0.1:8444")
        #expect(settings.api.readOnly)
        #expect(settings.api.requestsPerMinute == 60)
        #expect(settings.apply(environment: ["AASAD_API_REQUESTS_PER_MINUTE": "100000"]).problems.isEmpty)
        let environment = settings.apply(environment: ["AASAD_API_LISTEN": "off", "AASAD_API_REQUESTS_PER_MINUTE": "100001"])
        #expect(settings.api.listen == nil)
        #expect(environment.problems.map(\.key) == ["AASAD_API_REQUESTS_PER_MINUTE"])
        #expect(SettingsSchema.setting("api.tls-key")?.flag == "api-tls-key")
        var unknown = ServerSettings()
        #expect(!unknown.apply(yaml: "api:\n  token-file: x\n", file: "aasad.yaml").isEmpty)
    }

    @Test func aNonLoopbackListenerNeedsTheTLSPairAndTokens() {
        var settings = ServerSettings()
        settings.api.listen = "0.0.0.0:8444"
        let keys = settings.consistencyProblems(source: "test").map(\.key)
        #expect(keys.contains("api.listen"))
        #expect(keys.contains("api.tokens-file"))
        settings.api.tokensFile = "/t"
        settings.api.tlsCertificate = "/c"
        #expect(settings.consistencyProblems(source: "test").map(\.key) == ["api.tls-certificate", "api.listen"])
        settings.api.tlsKey = "/k"
        #expect(settings.consistencyProblems(source: "test").isEmpty)
        for loopback in ["127.0.0.1:8444", "[::1]:8444", "localhost:8444"] {
            var plain = ServerSettings()
            plain.api.listen = loopback
            plain.api.tokensFile = "/t"
            #expect(plain.consistencyProblems(source: "test").isEmpty, "\(loopback)")
        }
        #expect(!APISettings.isLoopback(":8444"))
        #expect(!APISettings.isLoopback("[::]:8444"))
    }

    /// The settings' TLS rule is the listener's reading of the address: a string prefix once took
    /// a host name starting with `127.` for loopback (the listener refuses it, and a resolver could
    /// send it anywhere) and an IPv4-mapped 127.0.0.0/8 for a network address.
    @Test func loopbackRuleIsTheListeners() {
        for address in [
            "127.example.com:8444", "127.0.0.1.evil.test:8444", "127.:8444", "127.0.0.1", "localhost", "localhost.:8444",
            "LOCALHOST:8444", "[::1]", "127.0.0.1:65536", "127.0.0.1:\r\n8444", "[::]:8444", "0.0.0.0:8444", "128.0.0.1:8444",
            "[::2]:8444",
        ] {
            #expect(!APISettings.isLoopback(address), "\(address.debugDescription)")
            var plain = ServerSettings()
            plain.api.listen = address
            plain.api.tokensFile = "/t"
            #expect(plain.consistencyProblems(source: "test").map(\.key) == ["api.listen"], "\(address.debugDescription)")
        }
        for address in ["127.0.0.1:8444", "127.255.255.254:0", "localhost:8444", "[::1]:8444", "[::ffff:127.0.0.1]:8444"] {
            #expect(APISettings.isLoopback(address), "\(address)")
            #expect(APISettings.isLoopback(address) == APIListenAddress.isLoopback(address))
        }
    }

    @Test func validateChecksTheTokensFile() throws {
        let path = NSTemporaryDirectory() + "/api-tokens-\(UUID().uuidString).yaml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var settings = ServerSettings()
        settings.api.tokensFile = path
        #expect(settings.api.fileProblems(source: "aasad.yaml").map(\.key) == ["api.tokens-file"])
        try Data("tokens:\n  - name: a\n    sha256: \(String(repeating: "ab", count: 32))\n    hosts: [\"*\"]\n".utf8).write(
            to: URL(fileURLWithPath: path))
        let noScope = settings.api.fileProblems(source: "aasad.yaml")
        #expect(noScope.first?.message.contains("scope") == true)
        try Data("tokens: []\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(settings.api.fileProblems(source: "aasad.yaml").isEmpty)
    }

    /// The ready line's `api=`: the address as given with the port the system chose, so that
    /// `api.listen: 127.0.0.1:0` works and tests read the port instead of picking one first.
    @Test func readyLineNamesTheAPIsBoundPort() {
        #expect(Daemon.apiBound("127.0.0.1:0", port: 41_234) == "127.0.0.1:41234")
        #expect(Daemon.apiBound("[::1]:0", port: 8_444) == "[::1]:8444")
        #expect(Daemon.apiBound(":0", port: 1) == ":1")
        #expect(Daemon.apiBound(nil, port: nil) == "off")
        #expect(Daemon.apiBound("127.0.0.1:0", port: nil) == "off")
        // What the line prints of the setting is escaped: no line break can forge a second line.
        #expect(!Daemon.apiBound("a\r\naasad ready: x:0", port: 1).contains("\n"))
    }

    /// A site's automatic certificate state is its least advanced name's: a failed name first,
    /// whatever the others are; `pending` before the manager knows any.
    @Test func siteCertificateStateIsTheLeastAdvancedName() {
        #expect(DaemonServedState.siteState([]) == "pending")
        #expect(DaemonServedState.siteState([.valid, .valid]) == "valid")
        #expect(DaemonServedState.siteState([.valid, .queued]) == "queued")
        #expect(DaemonServedState.siteState([.valid, .failed, .ordering]) == "failed")
        #expect(DaemonServedState.siteState([.capped, .waiting]) == "capped")
        #expect(DaemonServedState.date(0) == "1970-01-01T00:00:00Z")
    }
}
