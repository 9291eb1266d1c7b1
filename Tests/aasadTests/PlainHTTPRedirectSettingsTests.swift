import Foundation
import HTTPServer
import TestSupport
import Testing

/// ACME's HTTP-01 beside the redirect, on the in-process server with an HTTP-01 resolver.
@Suite("Plain HTTP redirect with ACME HTTP-01: the challenge path is still answered")
final class PlainHTTPRedirectChallengeTests {
    let server: ChallengeServer

    init() throws {
        server = try ChallengeServer(httpsRedirect: HTTPSRedirect())
        server.book.add(host: "a.test", token: HTTP01ChallengeTests.token, answer: HTTP01ChallengeTests.answer)
    }

    @Test("the HTTP-01 path gets the key authorization, a bad token 404, and every other path 301 to HTTPS")
    func challengeAnswered() throws {
        let answered = try server.http("a.test", HTTP01ChallengeTests.path)
        #expect(answered.status == 200 && answered.body == HTTP01ChallengeTests.answer && answered.headers["location"] == nil)
        for token in ["unknownToken", "..%2f..%2fetc", ""] {
            let r = try server.http("a.test", "/.well-known/acme-challenge/" + token)
            #expect(r.status == 404 && r.headers["location"] == nil, "\(token): \(r.status)")
        }
        let other = try server.http("a.test", "/.well-known/apple-app-site-association?x")
        #expect(other.status == 301)
        #expect(other.headers["location"] == "https://a.test:\(server.httpsPort)/.well-known/apple-app-site-association?x")
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
    }
}

/// `listen.http-redirect` and `listen.https-port` as settings: each value checked, and the two
/// together with the listeners.
@Suite("aasad.yaml: listen.http-redirect and listen.https-port")
final class PlainHTTPRedirectSettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("validate names each bad value with its key and line")
    func badValues() throws {
        let file = config.path("config/aasad.yaml")
        for (yaml, expected) in [
            ("listen:\n  http-redirect: maybe\n", "\(file): listen.http-redirect: must be true or false, not \"maybe\""),
            ("listen:\n  http-redirect: [true]\n", "\(file): listen.http-redirect: must be a single value"),
            ("listen:\n  https-port: 0\n", "\(file): listen.https-port: must be a port from 1 to 65535, not \"0\""),
            ("listen:\n  https-port: 65536\n", "\(file): listen.https-port: must be a port from 1 to 65535, not \"65536\""),
            ("listen:\n  https-port: -1\n", "\(file): listen.https-port: must be a port from 1 to 65535, not \"-1\""),
            ("listen:\n  https-port: 44x\n", "\(file): listen.https-port: must be a port from 1 to 65535, not \"44x\""),
            ("listen:\n  https-port: \"443\\r\\nX: y\"\n", "\(file): listen.https-port: must be a port from 1 to 65535, not \"443"),
            (
                "listen:\n  http-redirekt: true\n",
                "\(file): listen.http-redirekt: unknown key; listen knows https, http, http-redirect, https-port"
            ),
        ] {
            try config.write("config/aasad.yaml", Array(yaml.utf8))
            let out = try Tool.run(AASAD.binary.path, ["validate", config.config])
            #expect(out.status == 1, "\(yaml)")
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
    }

    @Test("the redirect needs a plain listener, and a port when there is no HTTPS listener")
    func together() throws {
        let file = config.path("config/aasad.yaml")
        for (yaml, expected) in [
            ("listen: {http-redirect: true}\n", "\(file): listen.http-redirect: needs a plain HTTP listener to redirect from"),
            (
                "listen: {https: [], http: [\":8080\"], http-redirect: true}\n",
                "\(file): listen.https-port: must be set when listen.http-redirect is on and listen.https is empty"
            ),
        ] {
            try config.write("config/aasad.yaml", Array(yaml.utf8))
            let out = try Tool.run(AASAD.binary.path, ["validate", file])
            #expect(out.status == 1, "\(yaml)")
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
        for yaml in [
            "listen: {http: [\":8080\"], http-redirect: true}\n",
            "listen: {https: [], http: [\":8080\"], http-redirect: true, https-port: 443}\n",
            "listen: {http-redirect: false, https-port: 8443}\n",
        ] {
            try config.write("config/aasad.yaml", Array(yaml.utf8))
            let out = try Tool.run(AASAD.binary.path, ["validate", file])
            #expect(out.status == 0, "\(yaml): \(out.text)")
        }
    }

    @Test("serve refuses bad values from a variable or a flag, and the redirect without a plain listener, binding nothing")
    func serveRefuses() throws {
        let variable = try Tool.run(
            "env",
            [
                "AASAD_LISTEN_HTTP_REDIRECT=maybe", AASAD.binary.path, "serve", "--config", config.config, "--state", config.state,
                "--https",
                "127.0.0.1:0",
            ])
        #expect(variable.status == 1)
        #expect(
            variable.stderr.contains("environment: AASAD_LISTEN_HTTP_REDIRECT: must be true or false, not \"maybe\""), "\(variable.stderr)")
        #expect(!variable.text.contains("aasad ready"))

        let flag = try Tool.run(AASAD.binary.path, ["serve", "--config", config.config, "--https-port", "70000"])
        #expect(flag.status == 64)
        #expect(flag.stderr.contains("--https-port: must be a port from 1 to 65535, not \"70000\""), "\(flag.stderr)")

        let alone = try Tool.run(
            AASAD.binary.path, ["serve", "--config", config.config, "--state", config.state, "--https", "127.0.0.1:0", "--http-redirect"])
        #expect(alone.status == 1)
        #expect(alone.stderr.contains("settings: listen.http-redirect: needs a plain HTTP listener"), "\(alone.stderr)")
        #expect(!alone.text.contains("aasad ready"))
    }
}
