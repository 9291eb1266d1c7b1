import Foundation
import TestSupport
import Testing

/// What the config directory and the settings feed into responses, tried as an attacker
/// or an unlucky operator would, where the binary is needed: settings refused by validate and
/// serve, a file that cannot be read after --user taken for a deleted one, the descriptor limit.
/// (Header injection from site.yaml and Last-Modified are tested on an in-process daemon:
/// Tests/DaemonServeTests/ConfigHardeningServeTests.swift.)
@Suite("Config hardening: header values, Last-Modified, unreadable files")
final class ConfigHardeningTests {
    let config: TestConfig
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
    }

    /// The errors `/sites` lists for one site directory, and its state.
    private func siteStatus(_ server: RunningServer, _ directory: String) throws -> (state: String, errors: [String])? {
        let listing = try server.admin("/sites")
        let object = try JSONSerialization.jsonObject(with: Data(listing.body)) as? [String: Any]
        let sites = object?["sites"] as? [[String: Any]] ?? []
        guard let site = sites.first(where: { $0["directory"] as? String == directory }) else { return nil }
        return (site["state"] as? String ?? "", site["errors"] as? [String] ?? [])
    }

    @Test("aasad.yaml, AASAD_CACHE_CONTROL and --cache-control refuse a value with CR/LF or other bytes, naming the byte")
    func settingsHeaderValues() throws {
        try config.write("config/aasad.yaml", Array("threads: 1\ncache-control: \"max-age=60\\r\\nX-Injected: yes\"\n".utf8))
        let file = config.path("config/aasad.yaml")
        let validate = try Tool.run(AASAD.binary.path, ["validate", file])
        #expect(validate.status == 1)
        #expect(validate.text.contains("\(file): cache-control:") && validate.text.contains("0x0D"), "\(validate.text)")
        #expect(validate.text.contains("line 2"), "\(validate.text)")
        let refused = try Tool.run(AASAD.binary.path, ["serve", "--config", config.config, "--https", "127.0.0.1:0"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("aasad.yaml:2: cache-control:") && refused.stderr.contains("0x0D"), "\(refused.stderr)")
        try FileManager.default.removeItem(atPath: file)

        for (value, byte) in [("max-age=60\r\nX-Injected: yes", "0x0D"), ("max-age=60\u{7F}", "0x7F"), ("max-age=60 \u{e9}", "0xC3")] {
            let environment = try Tool.run(
                "env", ["AASAD_CACHE_CONTROL=\(value)", AASAD.binary.path, "serve", "--config", config.config, "--https", "127.0.0.1:0"])
            #expect(environment.status == 1)
            #expect(
                environment.stderr.contains("environment: AASAD_CACHE_CONTROL:") && environment.stderr.contains(byte),
                "\(environment.stderr)")
            let flag = try Tool.run(
                AASAD.binary.path, ["serve", "--config", config.config, "--https", "127.0.0.1:0", "--cache-control", value])
            #expect(flag.status == 64)
            #expect(flag.stderr.contains("--cache-control:") && flag.stderr.contains(byte), "\(flag.stderr)")
        }
    }

    @Test(
        "after --user, a served file or key the user cannot read keeps the last good version, with the error on /sites",
        .enabled(if: getuid() == 0))
    func unreadableKeepsLastGood() throws {
        let server = try RunningServer(config: config, extra: ["--user", "nobody"])
        #expect(try server.http("a.test", Self.path).body == config.aasa)
        #expect(try server.https("own.test", Self.path, cacert: config.ownCA).status == 200)

        // Root-owned and 0600: nobody cannot open it (EACCES), but it is not deleted.
        let file = config.path("config/sites/a.test/apple-app-site-association")
        #expect(chmod(file, 0o600) == 0)
        #expect(try eventually { try siteStatus(server, "a.test")?.state == "serving-last-good" })
        let errors = try #require(try siteStatus(server, "a.test")).errors
        #expect(errors.contains { $0.contains("apple-app-site-association") && $0.contains("permission denied") }, "\(errors)")
        #expect(try server.http("a.test", Self.path).body == config.aasa)

        // own.test's key.pem (made 0600 by openssl, owned by root) and a whole site directory
        // nobody may not enter: a full rescan keeps both serving.
        #expect(chmod(config.path("config/sites/own.test/tls/key.pem"), 0o000) == 0)
        #expect(chmod(config.path("config/sites/*.w.test"), 0o700) == 0)
        server.signal(SIGHUP)
        #expect(try eventually { try siteStatus(server, "own.test")?.state == "serving-last-good" })
        #expect(try eventually { try siteStatus(server, "*.w.test")?.state == "serving-last-good" })
        #expect(try server.https("own.test", Self.path, cacert: config.ownCA).status == 200, "own.test lost its certificate")
        #expect(try server.http("x.w.test", Self.path).body == config.wildcardAASA)

        // Readable again: fixed.
        #expect(chmod(file, 0o644) == 0)
        #expect(chmod(config.path("config/sites/*.w.test"), 0o755) == 0)
        server.signal(SIGHUP)
        #expect(try eventually { try siteStatus(server, "a.test")?.state == "serving" })
        #expect(try eventually { try siteStatus(server, "*.w.test")?.state == "serving" })
        #expect(try server.http("a.test", Self.path).body == config.aasa)
        #expect(server.stop() == 0)
        #expect(server.log().contains("serving the last good version: a.test"))
    }

    @Test(
        "under --user with the development certificate, the state stays the user's (the keys 0600) and an upgrade (SIGUSR2) serves; a shared --state keeps its owner",
        .enabled(if: getuid() == 0), arguments: [0, 0o1777])
    func upgradeAfterDroppingRoot(sharedMode: Int) throws {
        // 0: aasad makes the state directory (0700); else one made before, shared like /tmp.
        if sharedMode != 0 {
            try FileManager.default.createDirectory(atPath: config.state, withIntermediateDirectories: true)
            #expect(chmod(config.state, mode_t(sharedMode)) == 0)
        }
        let server = try RunningServer(config: config, extra: ["--user", "nobody"])
        #expect(try server.https("a.test", Self.path).body == config.aasa)
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        for (path, owner, mode) in [
            ("state", sharedMode == 0 ? nobody : 0, sharedMode == 0 ? 0o700 : sharedMode), ("state/dev-tls", nobody, 0o700),
            ("state/dev-tls/ca-key.pem", nobody, 0o600), ("state/dev-tls/ca.pem", nobody, 0o644),
            ("state/dev-tls/key.pem", nobody, 0o600),
        ] {
            var info = stat()
            #expect(stat(config.path(path), &info) == 0, "\(path)")
            #expect(info.st_uid == owner, "\(path) is owned by \(info.st_uid)")
            #expect(Int(info.st_mode & 0o7777) == mode, "\(path): \(String(info.st_mode & 0o7777, radix: 8))")
        }
        server.signal(SIGUSR2)
        #expect(
            eventually(attempts: 300) {
                let log = server.logSoFar()
                return log.contains("the new process is ready") || log.contains("upgrade failed")
            }, "\(server.logSoFar())")
        let log = server.logSoFar()
        #expect(log.contains("the new process is ready"), "\(log)")
        // The new process's id, from the line that names it; it is stopped at the end.
        let line = log.split(separator: "\n").first { $0.contains("the new process is ready") } ?? ""
        let newPID = line.range(of: "pid=").map { line[$0.upperBound...].prefix { $0.isNumber } }.flatMap { Int32($0) }
        defer {
            if let newPID {
                kill(newPID, SIGTERM)
                // Gone, or a zombie its new parent has not reaped yet.
                _ = eventually(attempts: 150) {
                    guard let stat = try? String(contentsOfFile: "/proc/\(newPID)/stat", encoding: .utf8) else { return true }
                    return stat.contains(") Z ")
                }
            }
        }
        #expect(newPID != nil, "\(line)")
        server.process.waitUntilExit()
        // The old process is gone: what answers now is the new one, on the same port, over the
        // same development CA, as nobody.
        #expect(try server.https("a.test", Self.path).body == config.aasa)
        if let newPID {
            let status = (try? String(contentsOfFile: "/proc/\(newPID)/status", encoding: .utf8)) ?? ""
            let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") } ?? ""
            #expect(uid.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().allSatisfy { $0 == "\(nobody)" }, "\(uid)")
        }
    }

    @Test(
        "as root, a link planted in a state directory the --user owns (cache, dev-tls) is refused at start: nothing is written where it leads",
        .enabled(if: getuid() == 0), arguments: ["cache", "dev-tls"])
    func linkInHandedState(entry: String) throws {
        let nobody = try #require(getpwnam("nobody")).pointee
        try FileManager.default.createDirectory(atPath: config.state, withIntermediateDirectories: true)
        #expect(chmod(config.state, 0o700) == 0 && chown(config.state, nobody.pw_uid, nobody.pw_gid) == 0)
        let elsewhere = config.path("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: config.state + "/" + entry, withDestinationPath: elsewhere)
        // A time limit: a server that follows the link starts and serves.
        let out = try Tool.run(
            "timeout",
            [
                "20", AASAD.binary.path, "serve", "--config", config.config, "--state", config.state, "--https", "127.0.0.1:0", "--user",
                "nobody",
            ])
        #expect(out.status == 1, "\(out.stderr)")
        #expect(out.stderr.contains("\(entry) is a symbolic link"), "\(out.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
    }

    @Test("serve raises its soft descriptor limit to the hard limit")
    func descriptorLimitRaised() throws {
        let server = try RunningServer(config: config, softFileLimit: 256)
        let limits = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.count == 2 && numbers[0] == numbers[1] && numbers[0] > 256, "\(line)")
    }
}
