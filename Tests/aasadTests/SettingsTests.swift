import Foundation
import TestSupport
import Testing

@Suite("aasad.yaml, AASAD_* variables and flags")
final class SettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("the shipped config/aasad.yaml is valid and lists every default")
    func shipped() throws {
        let out = try Tool.run(AASAD.binary.path, ["validate", AASAD.repositoryRoot.appendingPathComponent("config/aasad.yaml").path])
        #expect(out.status == 0, "\(out.text)")
        #expect(out.text.contains("1 file checked: 0 errors"))
    }

    @Test("validate names the file, line and key of each bad setting, and unknown keys are errors")
    func validateSettings() throws {
        try config.write(
            "config/aasad.yaml",
            Array(
                """
                listen:
                  https: [":8443", "nowhere"]
                timeouts:
                  idel: 5
                  write: 0
                tls: {min-version: "1.1"}
                logging: {level: loud}
                threads: 0
                colour: blue
                user: "nobody\\r\\nerror: forged line"

                """.utf8))
        let out = try Tool.run(AASAD.binary.path, ["validate", config.config])
        #expect(out.status == 1)
        let file = config.path("config/aasad.yaml")
        for expected in [
            "error: \(file): listen.https: cannot listen on \"nowhere\"",
            "error: \(file): timeouts.idel: unknown key; timeouts knows handshake, request, idle, write, drain, shutdown-delay [settings, line 4, column 3]",
            "error: \(file): timeouts.write: must be whole seconds from 1 to 86400, not \"0\"",
            "error: \(file): tls.min-version: must be one of \"1.2\", \"1.3\", not \"1.1\"",
            "error: \(file): logging.level: must be one of \"trace\", \"debug\", \"info\", \"notice\", \"warning\", \"error\", \"critical\", not \"loud\"",
            "error: \(file): threads: must be auto or a number from 1 to 1024, not \"0\"",
            "error: \(file): colour: unknown key; the file knows listen, threads",
        ] {
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
        // A value's CR/LF is shown escaped: it cannot forge a line of the report.
        #expect(out.text.contains(#"no such user "nobody\x0D\x0Aerror: forged line""#), "\(out.text)")
        #expect(!out.text.contains("\nerror: forged line"))
        // A file over the 64 KB bound is refused unread; one at the bound is read.
        let comment = "# " + String(repeating: "x", count: 64 * 1024 - 3) + "\n"
        try config.write("config/aasad.yaml", Array(comment.utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", file]).status == 0)
        try config.write("config/aasad.yaml", Array((comment + "\n").utf8))
        let oversize = try Tool.run(AASAD.binary.path, ["validate", file])
        #expect(oversize.status == 1)
        #expect(oversize.text.contains("aasad.yaml: (file): larger than 64 KB"), "\(oversize.text)")
        // A file that is not YAML, and one that is YAML but not a mapping.
        try config.write("config/aasad.yaml", Array("listen: [\n".utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", config.config]).text.contains("not valid YAML"))
        try config.write("config/aasad.yaml", Array("- a\n- b\n".utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", config.config]).text.contains("must be a mapping of keys"))
    }

    @Test("the stop and upgrade settings refuse bad values: a delay past 300 s or negative, a PID file path with control bytes")
    func stopAndUpgradeSettings() throws {
        try config.write("config/aasad.yaml", Array("timeouts: {shutdown-delay: 301}\npid-file: \"a\\r\\nb\"\n".utf8))
        let out = try Tool.run(AASAD.binary.path, ["validate", config.config])
        #expect(out.status == 1)
        #expect(out.text.contains("timeouts.shutdown-delay: must be whole seconds from 0 to 300, not \"301\""), "\(out.text)")
        #expect(out.text.contains("pid-file: must be a path"), "\(out.text)")
        try config.write("config/aasad.yaml", Array("timeouts: {shutdown-delay: -1}\n".utf8))
        #expect(try Tool.run(AASAD.binary.path, ["validate", config.config]).text.contains("not \"-1\""))
    }

    @Test("a stray upgrade variable (no passed listeners) names nothing: stdout and stderr stay open, the server serves")
    func strayUpgradeVariables() throws {
        let server = try RunningServer(
            config: config, environment: ["AASAD_UPGRADE_READY_FD": "2", "AASAD_UPGRADE_TICKET_KEYS_FD": "1"])
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(server.stop() == 0)
        #expect(server.log().contains("stopping"), "the log (standard error) was not closed")
    }

    @Test("serve refuses to start on bad settings, naming each problem, and binds nothing")
    func serveRefuses() throws {
        try config.write("config/aasad.yaml", Array("timeouts:\n  idle: forever\n".utf8))
        let out = try Tool.run(AASAD.binary.path, ["serve", "--config", config.config, "--state", config.state, "--https", "127.0.0.1:0"])
        #expect(out.status == 1)
        #expect(out.stderr.contains("aasad.yaml:2: timeouts.idle: must be whole seconds from 1 to 86400, not \"forever\""), "\(out.stderr)")
        #expect(!out.text.contains("aasad ready"))

        try FileManager.default.removeItem(atPath: config.path("config/aasad.yaml"))
        let environment = try Tool.run(
            "env", ["AASAD_TIMEOUTS_DRAIN=0", AASAD.binary.path, "serve", "--config", config.config, "--https", "127.0.0.1:0"])
        #expect(environment.status == 1)
        #expect(environment.stderr.contains("environment: AASAD_TIMEOUTS_DRAIN: must be whole seconds"), "\(environment.stderr)")

        let flag = try Tool.run(AASAD.binary.path, ["serve", "--config", config.config, "--tls-min-version", "1.0"])
        #expect(flag.status == 64)
        #expect(flag.stderr.contains("--tls-min-version: must be one of \"1.2\", \"1.3\""), "\(flag.stderr)")
    }

    @Test("the file sets, an AASAD_* variable overrides the file, a flag overrides both")
    func precedence() throws {
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\nadmin: off\n".utf8))
        func cacheControl(_ extra: [String], _ environment: [String: String]) throws -> String? {
            let server = try RunningServer(config: config, extra: extra, environment: environment)
            return try server.http("a.test", "/apple-app-site-association").headers["cache-control"]
        }
        #expect(try cacheControl([], [:]) == "max-age=11")
        #expect(try cacheControl([], ["AASAD_CACHE_CONTROL": "max-age=22"]) == "max-age=22")
        #expect(try cacheControl(["--cache-control", "max-age=33"], ["AASAD_CACHE_CONTROL": "max-age=22"]) == "max-age=33")
        // Lists from the environment are comma-separated; the file's `admin: off` is overridden by
        // the harness's --admin flag, and a variable that names no setting is reported, not fatal.
        let server = try RunningServer(
            config: config, extra: [], environment: ["AASAD_LISTEN_HTTP": "127.0.0.1:0, 127.0.0.1:0", "AASAD_TIMEOUT_IDLE": "5"])
        #expect(server.adminPort > 0)
        #expect(try server.http("a.test", "/apple-app-site-association").status == 200)
        #expect(server.stop() == 0)
        #expect(server.log().contains("AASAD_TIMEOUT_IDLE is not a setting; ignored"))
    }

    @Test("--user drops root after binding: the process runs as that user and goes on serving", .enabled(if: getuid() == 0))
    func dropPrivileges() throws {
        let server = try RunningServer(config: config, extra: ["--user", "nobody"])
        let status = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }.map {
            $0.split(separator: "\t").dropFirst().map(String.init)
        }
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        #expect(uid == Array(repeating: "\(nobody)", count: 4), "real, effective, saved and filesystem uid: \(uid ?? [])")
        #expect(try server.https("a.test", "/apple-app-site-association").status == 200)
        #expect(try server.http("a.test", "/apple-app-site-association").body == config.aasa)
    }

    @Test("--user names a user that does not exist: an error, nothing started")
    func unknownUser() throws {
        let out = try Tool.run(AASAD.binary.path, ["serve", "--config", config.config, "--user", "no-such-user-aasad"])
        #expect(out.status == 64)
        #expect(out.stderr.contains("no such user \"no-such-user-aasad\""))
    }
}

/// The access log in JSON and its reopening on SIGHUP; the text format is tested in-process
/// (Tests/DaemonServeTests/SettingsServeTests.swift).
@Suite("aasad serve: access log")
final class AccessLogTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("with --log-format json each line is a JSON object; SIGHUP reopens the file after it is moved")
    func jsonAndReopen() throws {
        let path = config.path("access.log")
        let server = try RunningServer(config: config, extra: ["--access-log", path, "--log-format", "json"])
        #expect(try server.http("a.test", "/apple-app-site-association", ["-A", "é\t\"!"]).status == 200)
        let first = fileLines(path, atLeast: 1)
        #expect(first.count == 1)
        let object = try JSONSerialization.jsonObject(with: Data((first.first ?? "").utf8)) as? [String: Any]
        #expect(object?["host"] as? String == "a.test")
        #expect(object?["method"] as? String == "GET")
        #expect(object?["path"] as? String == "/apple-app-site-association")
        #expect(object?["status"] as? Int == 200)
        #expect(object?["bytes"] as? Int == config.aasa.count)
        #expect(object?["client"] as? String == "127.0.0.1")
        #expect(object?["userAgent"] as? String == "é\t\"!")
        #expect((object?["time"] as? String)?.wholeMatch(of: #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/#) != nil)

        // logrotate: move the file away, SIGHUP, and new lines go to a new file at the same path.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        server.signal(SIGHUP)
        var reopened: [String] = []
        _ = try eventually(attempts: 50) {
            _ = try server.http("a.test", "/.well-known/apple-app-site-association")
            reopened = fileLines(path, atLeast: 0)
            return !reopened.isEmpty
        }
        #expect(!reopened.isEmpty, "nothing written after SIGHUP")
        #expect(fileLines(path + ".1", atLeast: 1).count == 1)
    }
}
