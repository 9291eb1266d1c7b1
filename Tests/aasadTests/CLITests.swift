import Foundation
import TestSupport
import Testing

/// Runs the built `aasad` binary as a user would.
enum AASAD {
    /// The executable the tests run (`Binary.aasad`).
    static var binary: URL { Binary.aasad }

    /// This test target's directory: fixtures and golden files live here, and commands run here
    /// so that the paths they print are stable.
    static let testDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let repositoryRoot = testDirectory.deletingLastPathComponent().deletingLastPathComponent()

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `environment`: the variables to set (a nil value unsets one), over the test's own.
    static func run(_ arguments: [String], in directory: URL = testDirectory, environment: [String: String?] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            process.environment = merged
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Compares text with a golden file; `AASAD_UPDATE_GOLDEN=1` rewrites the file instead.
    static func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let url = testDirectory.appendingPathComponent("Golden").appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["AASAD_UPDATE_GOLDEN"] == "1" {
            try Data(text.utf8).write(to: url)
            return
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        #expect(
            text == expected, "output differs from Golden/\(name); rerun with AASAD_UPDATE_GOLDEN=1 to accept",
            sourceLocation: sourceLocation)
    }
}

@Suite("aasad command line (the real binary)")
struct CLITests {
    @Test(
        "help texts match their golden files",
        arguments: [
            (["--help"], "help.txt"), (["validate", "--help"], "validate-help.txt"), (["match", "--help"], "match-help.txt"),
            (["serve", "--help"], "serve-help.txt"), (["help", "serve"], "serve-help.txt"),
        ])
    func help(_ arguments: [String], _ golden: String) throws {
        let out = try AASAD.run(arguments)
        #expect(out.status == 0)
        try AASAD.expectGolden(out.stdout, golden)
    }

    @Test("--version prints the version")
    func version() throws {
        let out = try AASAD.run(["--version"])
        #expect(out.status == 0)
        #expect(out.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
    }

    @Test("validate on the shipped config passes with exit 0")
    func validateShippedConfig() throws {
        let out = try AASAD.run(["validate", "config"], in: AASAD.repositoryRoot)
        #expect(out.status == 0, "\(out.stdout)")
        #expect(out.stdout.hasSuffix("— ok\n"))
    }

    @Test("validate names file, JSON path, value, rule and advice, and exits 1")
    func validateBrokenFile() throws {
        let out = try AASAD.run(["validate", "Fixtures/broken-aasa.json"])
        #expect(out.status == 1)
        try AASAD.expectGolden(out.stdout, "validate-broken.txt")
        #expect(
            out.stdout.contains(
                #"error: Fixtures/broken-aasa.json: applinks.details[0].appID: "ABC.com.x" — the team ID prefix must be 10 characters"#))
    }

    @Test("validate reports a JSON syntax error with line and column")
    func validateSyntax() throws {
        let out = try AASAD.run(["validate", "Fixtures/trailing-comma.json"])
        #expect(out.status == 1)
        try AASAD.expectGolden(out.stdout, "validate-trailing-comma.txt")
    }

    @Test("validate --format json is a stable structure")
    func validateJSON() throws {
        let out = try AASAD.run(["validate", "--format", "json", "Fixtures/broken-aasa.json", "Fixtures/two-apps.json"])
        #expect(out.status == 1)
        try AASAD.expectGolden(out.stdout, "validate-broken.json")
        let object = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        #expect(object?["valid"] as? Bool == false)
        #expect((object?["files"] as? [Any])?.count == 2)
    }

    @Test("--strict turns warnings into exit 1")
    func strict() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aasad-strict-\(UUID().uuidString).json")
        try Data(#"{"applinks": {"details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}}"#.utf8).write(to: dir)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try AASAD.run(["validate", dir.path]).status == 0)
        #expect(try AASAD.run(["validate", "--strict", dir.path]).status == 1)
    }

    @Test("a missing path is an error, not a crash")
    func missingPath() throws {
        let out = try AASAD.run(["validate", "no/such/file"])
        #expect(out.status == 1)
        #expect(out.stdout.contains("no such file or directory"))
    }

    @Test(
        "bad arguments exit with EX_USAGE and a sentence to act on",
        arguments: [
            ["validate"], ["match", "https://e.com/x"], ["match", "--file", "a", "--config", "b", "https://e.com/x"],
            ["match", "--file", "a"],
        ])
    func usage(_ arguments: [String]) throws {
        let out = try AASAD.run(arguments)
        #expect(out.status == 64, "\(arguments): \(out.stderr)")
        #expect(!out.stderr.isEmpty)
    }

    @Test("match explains one line per app, swcutil style")
    func matchText() throws {
        let out = try AASAD.run([
            "match", "--file", "Fixtures/two-apps.json", "https://shop.example/p/1", "https://shop.example/checkout/1", "/p/secret",
            "/nothing-here",
        ])
        #expect(out.status == 0)
        try AASAD.expectGolden(out.stdout, "match-two-apps.txt")
    }

    @Test(
        "match --expect: exit 0 only when every URL opens that app (or none), a line per URL that does not",
        arguments: [
            (["ABCDE12345.com.example.shop", "https://shop.example/p/1"], Int32(0), ""),
            (["FGHIJ67890.com.example.reader", "https://shop.example/checkout/1", "/zzz"], 0, ""),
            (
                ["ABCDE12345.com.example.shop", "https://shop.example/p/1", "https://shop.example/checkout/1"], 1,
                "https://shop.example/checkout/1: opens FGHIJ67890.com.example.reader (decided by applinks.details[1].paths[1] \"*\"), expected it to open ABCDE12345.com.example.shop\n"
            ),
            (
                ["none", "https://shop.example/p/1"], 1,
                "https://shop.example/p/1: opens ABCDE12345.com.example.shop (decided by applinks.details[0].components[1] {\"/\": \"/p/*\"}), expected no app\n"
            ),
        ])
    func matchExpect(_ arguments: [String], _ status: Int32, _ stderr: String) throws {
        let out = try AASAD.run(["match", "--file", "Fixtures/two-apps.json", "--expect"] + arguments)
        #expect(out.status == status, "\(out.stderr)")
        #expect(out.stderr == stderr)
    }

    @Test("match --expect none: 0 for URLs no app opens, 1 for one an app opens; a malformed app ID is a usage error")
    func matchExpectNone() throws {
        let none = try AASAD.run(["match", "--file", "Fixtures/two-apps.json", "--expect", "none", "/p/secret"])
        #expect(none.status == 1, "an app opens it")
        let directory = try TemporaryDirectory(prefix: "aasad-expect")
        try directory.write(
            "aasa.json",
            Array(
                #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/admin/*", "exclude": true}, {"/": "/buy/*"}]}]}}"#
                    .utf8))
        let passes = try AASAD.run(["match", "--file", directory.path("aasa.json"), "--expect", "none", "/admin/users", "/other"])
        #expect(passes.status == 0, "\(passes.stderr)")
        #expect(passes.stderr.isEmpty)
        let file = try AASAD.run(["match", "--file", "Fixtures/two-apps.json", "--expect", "com.example.shop", "/p/1"])
        #expect(file.status == 64)
        #expect(file.stderr.contains("Team ID"))
    }

    @Test("match --format json: one object for one URL, with null appID when nothing opens it")
    func matchJSONOne() throws {
        let out = try AASAD.run(["match", "--format", "json", "--file", "Fixtures/two-apps.json", "https://shop.example/checkout/1"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        #expect(object["url"] as? String == "https://shop.example/checkout/1")
        #expect(object["appID"] as? String == "FGHIJ67890.com.example.reader")
        let decidedBy = try #require(object["decidedBy"] as? [String: Any])
        #expect(decidedBy["detail"] as? Int == 1)
        #expect(decidedBy["pattern"] as? Int == 1)
        #expect(decidedBy["source"] as? String == "paths")
        let apps = try #require(object["apps"] as? [[String: Any]])
        #expect(apps.map { $0["decision"] as? String } == ["block", "match"])
    }

    @Test("match --format json: an array for several URLs, stable keys")
    func matchJSONMany() throws {
        let out = try AASAD.run(["match", "--format", "json", "--file", "Fixtures/two-apps.json", "/p/secret", "/zzz"])
        #expect(out.status == 0)
        try AASAD.expectGolden(out.stdout, "match-two-apps.json")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 2)
        #expect(list.allSatisfy { $0.keys.contains("appID") && $0.keys.contains("decidedBy") && $0.keys.contains("apps") })
    }

    @Test("match --config picks the site by host: exact, alias, wildcard")
    func matchConfig() throws {
        let out = try AASAD.run(
            [
                "match", "--config", "config", "https://links.localhost/en/news/1", "https://www.links.localhost/admin/x",
                "https://bob.users.localhost/posts/1",
            ],
            in: AASAD.repositoryRoot)
        #expect(out.status == 0)
        try AASAD.expectGolden(out.stdout, "match-config.txt")
    }

    @Test("match refuses an invalid file, since no device would use it")
    func matchInvalidFile() throws {
        let out = try AASAD.run(["match", "--file", "Fixtures/broken-aasa.json", "/buy/1"])
        #expect(out.status == 1)
        #expect(out.stdout.contains("is invalid"))
    }

    @Test(
        "match reports unknown hosts and bad URLs with exit 1",
        arguments: [
            "https://unknown.localhost/x", "ftp://links.localhost/x", "/path-needs-a-host",
        ])
    func matchErrors(_ url: String) throws {
        let out = try AASAD.run(["match", "--config", "config", url], in: AASAD.repositoryRoot)
        #expect(out.status == 1)
        #expect(out.stdout.contains("error: "))
    }
}
