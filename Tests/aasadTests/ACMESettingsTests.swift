import Foundation
import TestSupport
import Testing

@Suite("aasad.yaml's acme section: each value checked, and the values together")
final class ACMESettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("validate names every bad acme value, with the key; a header or JSON injection never passes")
    func badValues() throws {
        try config.write(
            "config/aasad.yaml",
            Array(
                """
                acme:
                  directory: http://ca.test/directory
                  email: "ops@example.com\\r\\nX-Injected: 1"
                  challenges: [tls-alpn-01, tls-sni-01]
                  storage: ""
                  orders-per-hour: 0
                  names-per-site: 100001
                  eab: {kid: "a b", hmac-key: "not base64url!"}
                  retries: 3

                """.utf8))
        let out = try Tool.run(AASAD.binary.path, ["validate", config.config])
        #expect(out.status == 1)
        let file = config.path("config/aasad.yaml")
        for expected in [
            "\(file): acme.directory: must be the CA's https directory URL, not \"http://ca.test/directory\"",
            "\(file): acme.email: must be one email address",
            "\(file): acme.challenges: \"tls-sni-01\" is not a challenge aasad answers (tls-alpn-01, http-01, dns-01)",
            "\(file): acme.storage: must be a path",
            "\(file): acme.orders-per-hour: must be a number of orders from 1 to 100000, not \"0\"",
            "\(file): acme.eab.kid: must be the key identifier the CA gave",
            "\(file): acme.eab.hmac-key: must be the base64url MAC key the CA gave",
            "\(file): acme.names-per-site: must be a number of names from 1 to 100000, not \"100001\"",
            "\(file): acme.retries: unknown key; acme knows directory, email, directory-ca, storage, challenges, eab, dns-hook, orders-per-hour, names-per-site",
        ] {
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
    }

    @Test("values that only fail together: half an EAB pair, http-01 alone without a plain listener, dns-01 without a hook")
    func together() throws {
        let file = config.path("config/aasad.yaml")
        for (yaml, expected) in [
            ("acme: {directory: \"https://ca.test/dir\", eab: {kid: k1}}\n", "acme.eab: needs both kid and hmac-key"),
            (
                "acme: {directory: \"https://ca.test/dir\", challenges: [http-01]}\n",
                "acme.challenges: http-01 alone needs a plain HTTP listener"
            ),
            ("acme: {directory: \"https://ca.test/dir\", challenges: [dns-01]}\n", "acme.challenges: dns-01 needs acme.dns-hook"),
        ] {
            try config.write("config/aasad.yaml", Array(yaml.utf8))
            let out = try Tool.run(AASAD.binary.path, ["validate", file])
            #expect(out.status == 1, "\(yaml)")
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
        // With a plain listener, http-01 alone is fine; without a directory nothing is checked.
        try config.write(
            "config/aasad.yaml",
            Array("listen: {http: [\":8080\"]}\nacme: {directory: \"https://ca.test/dir\", challenges: [http-01]}\n".utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", file]).status == 0)
        try config.write("config/aasad.yaml", Array("acme: {challenges: [http-01]}\n".utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", file]).status == 0)
    }

    @Test("acme.names-per-site at its bounds: 1 and 100000 are taken, 0 and 100001 are not")
    func namesPerSiteBounds() throws {
        let file = config.path("config/aasad.yaml")
        for (value, valid) in [
            ("1", true), ("100000", true), ("0", false), ("100001", false), ("-1", false), ("9999999999999999999999", false),
        ] {
            try config.write("config/aasad.yaml", Array("acme: {directory: \"https://ca.test/dir\", names-per-site: \(value)}\n".utf8))
            let out = try Tool.run(AASAD.binary.path, ["validate", file])
            #expect((out.status == 0) == valid, "\(value): \(out.text)")
        }
        let environment = try Tool.run(
            "env", ["AASAD_ACME_NAMES_PER_SITE=0", AASAD.binary.path, "serve", "--config", config.config, "--https", "127.0.0.1:0"])
        #expect(environment.stderr.contains("environment: AASAD_ACME_NAMES_PER_SITE: must be a number of names"), "\(environment.stderr)")
    }

    @Test("serve refuses bad acme settings from the environment, and binds nothing")
    func serveRefuses() throws {
        let out = try Tool.run(
            "env",
            [
                "AASAD_ACME_DIRECTORY=https://ca.test/dir", "AASAD_ACME_CHALLENGES=http-01", AASAD.binary.path, "serve", "--config",
                config.config, "--state", config.state, "--https", "127.0.0.1:0",
            ])
        #expect(out.status == 1)
        #expect(out.stderr.contains("settings: acme.challenges: http-01 alone needs a plain HTTP listener"), "\(out.stderr)")
        #expect(!out.text.contains("aasad ready"))
        let orders = try Tool.run(
            "env", ["AASAD_ACME_ORDERS_PER_HOUR=lots", AASAD.binary.path, "serve", "--config", config.config, "--https", "127.0.0.1:0"])
        #expect(orders.status == 1)
        #expect(orders.stderr.contains("environment: AASAD_ACME_ORDERS_PER_HOUR: must be a number of orders"), "\(orders.stderr)")
        // A value with CR/LF stays on its line.
        let forged = try Tool.run(
            "env",
            [
                "AASAD_ACME_ORDERS_PER_HOUR=5\r\nerror: forged", AASAD.binary.path, "serve", "--config", config.config, "--https",
                "127.0.0.1:0",
            ])
        #expect(forged.status == 1)
        #expect(forged.stderr.contains("not \"5\\x0D\\x0Aerror: forged\""), "\(forged.stderr)")
        #expect(!forged.stderr.split(separator: "\n").contains { $0.hasPrefix("error: forged") })
    }

    @Test("with acme on, a host the default pair does not cover is valid: it gets an automatic certificate")
    func defaultPairNotCovering() throws {
        let tls = config.path("config/tls")
        try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
        let made = try Tool.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=other.test",
                "-addext", "subjectAltName=DNS:other.test", "-keyout", tls + "/key.pem", "-out", tls + "/cert.pem",
            ])
        #expect(made.status == 0)
        try FileManager.default.removeItem(atPath: config.path("config/sites/bad.test"))
        let without = try Tool.run(AASAD.binary.path, ["validate", config.config])
        #expect(without.status == 1)
        #expect(without.text.contains("does not cover a.test"), "\(without.text)")
        try config.write("config/aasad.yaml", Array("acme: {directory: \"https://ca.test/dir\"}\n".utf8))
        let with = try Tool.run(AASAD.binary.path, ["validate", config.config])
        #expect(with.status == 0, "\(with.text)")
    }
}
