import Foundation
import TestSupport
import Testing

/// The tenant API's writes against a process that dies (docs/api.md, "Writing a site"): `aasad`
/// killed with SIGKILL while 1,000 PUTs are in flight, and a client killed in the middle of its
/// body. Every site must be its old files or one PUT's files, never a mix, and the directory
/// must pass `aasad validate`. The PUTs and the check are Fixtures/api_put_storm.py.
@Suite("tenant API: kill -9 of aasad or of a client mid-PUT leaves whole sites")
struct APICrashTests {
    static let token = "apiload-crash-test-token"
    /// Sites that exist before the PUTs (their old files must survive whole) and names that do
    /// not (absent or one PUT's files afterwards).
    static let oldHosts = (0..<20).map { "old-\($0).apiload.test" }
    static let newHosts = (0..<20).map { "new-\($0).apiload.test" }
    static let fixture = AASAD.testDirectory.appendingPathComponent("Fixtures/api_put_storm.py").path

    /// The old files of `host`, all four the API manages, each naming the host.
    static func oldFiles(_ host: String) -> [String: String] {
        [
            "apple-app-site-association": #"{"webcredentials": {"apps": ["ABCDE12345.com.example.\#(host)"]}}"#,
            "assetlinks.json":
                #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.old", "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#,
            "site.yaml": "cache-control: max-age=7\npage: index.html\n",
            "index.html": "<!doctype html><title>\(host) old</title>",
        ]
    }

    /// A config of TestConfig's sites (bad.test removed: the directory must validate) and the
    /// old sites, and a server with the API on loopback.
    static func start(_ config: TestConfig) throws -> (RunningServer, apiPort: Int) {
        let server = try RunningServer(
            config: config,
            extra: [
                "--api-listen", "127.0.0.1:0", "--api-tokens-file", config.path("tokens.yaml"),
                // 1,000 PUTs within a minute from one token: above the default 600.
                "--api-requests-per-minute", "100000",
            ])
        return (server, server.apiPort)
    }

    static func makeConfig() throws -> TestConfig {
        let config = try TestConfig()
        try FileManager.default.removeItem(atPath: config.path("config/sites/bad.test"))
        for host in oldHosts {
            for (name, text) in oldFiles(host) { try config.write("config/sites/\(host)/\(name)", Array(text.utf8)) }
        }
        let digest = try Tool.run("sha256sum", [], input: Array(token.utf8)).text.prefix(64)
        try config.write(
            "tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        return config
    }

    /// Names in `sites/` the API stages under (dot names, ignored by the loader).
    static func stagingNames(_ config: TestConfig) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: config.path("config/sites")).filter { $0.hasPrefix(".api-") }
    }

    @Test("kill -9 of aasad during 1,000 concurrent PUTs: every site old or written whole; validate clean; restart clears staging")
    func killServerDuringPuts() throws {
        let config = try Self.makeConfig()
        let (server, apiPort) = try Self.start(config)
        let hosts = zip(Self.oldHosts, Self.newHosts).flatMap { [$0, $1] }
        // 48 connections over four source addresses: under the listener's 16 per peer and 64 in all.
        let storm = try Launcher(
            script: "api_put_storm.py", arguments: ["storm", "\(apiPort)", Self.token, hosts.joined(separator: ","), "1000", "48"])
        defer { storm.finish() }
        // The event: 100 PUTs answered, so writes are under way on every connection; then SIGKILL.
        #expect(try storm.waitForAnswers(100))
        server.signal(SIGKILL)
        server.process.waitUntilExit()
        let report = try storm.report()
        let answers = report["answers"] as? [String: Int] ?? [:]
        let done = report["done"] as? [String: [Int]] ?? [:]
        // The kill cut PUTs in flight: not all 1,000 were answered.
        #expect(answers.values.reduce(0, +) < 1000, "\(report)")
        #expect(Set(answers.keys).isSubset(of: ["200", "201", "202"]), "\(report)")

        let old = Dictionary(uniqueKeysWithValues: Self.oldHosts.map { ($0, Self.oldFiles($0)) })
        try config.write("old.json", Array(try JSONSerialization.data(withJSONObject: old)))
        try config.write("done.json", Array(try JSONSerialization.data(withJSONObject: done)))
        let check = try Tool.run(
            "python3",
            [
                Self.fixture, "check", config.path("config/sites"), hosts.joined(separator: ","), config.path("old.json"),
                config.path("done.json"),
            ]
        )
        let verdict = try JSONSerialization.jsonObject(with: Data(check.stdout)) as? [String: Any] ?? [:]
        #expect((verdict["problems"] as? [String])?.isEmpty == true, "\(verdict) \(check.stderr)")
        // At least one written site: the check looked at written files, not only old ones.
        #expect((verdict["written"] as? Int ?? 0) > 0, "\(verdict)")

        let validate = try AASAD.run(["validate", config.config])
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")

        // A restart removes what the killed process left staged, and serves every site's files.
        let (again, _) = try Self.start(config)
        #expect(try Self.stagingNames(config) == [])
        for host in hosts {
            let onDisk = FileManager.default.contents(atPath: config.path("config/sites/\(host)/apple-app-site-association"))
            let served = try again.https(host, "/.well-known/apple-app-site-association")
            if let onDisk {
                #expect(served.status == 200 && served.body == [UInt8](onDisk), "\(host)")
            } else {
                #expect(served.status == 404, "\(host)")
            }
        }
        #expect(again.stop() == 0)
    }

    @Test("a client killed with SIGKILL in the middle of its PUT body changes nothing")
    func killClientMidBody() throws {
        let config = try Self.makeConfig()
        let (server, apiPort) = try Self.start(config)
        let host = Self.oldHosts[0]
        let client = try Launcher(script: "api_put_storm.py", arguments: ["cut", "\(apiPort)", Self.token, host])
        let line = try client.line()
        let clientPort = Int(line.split(separator: " ").last ?? "") ?? 0
        #expect(line.hasPrefix("port ") && clientPort > 0, "\(line)")
        // The event: the server holds the connection with half the body read.
        #expect(eventually { Self.serverSideStates(apiPort: apiPort, clientPort: clientPort).contains("01") })
        kill(client.process.processIdentifier, SIGKILL)
        client.finish()
        // The event: the server has closed its side (no row left established or waiting to close).
        #expect(eventually { Self.serverSideStates(apiPort: apiPort, clientPort: clientPort).allSatisfy { $0 != "01" && $0 != "08" } })
        for (name, text) in Self.oldFiles(host) {
            #expect(FileManager.default.contents(atPath: config.path("config/sites/\(host)/\(name)")) == Data(text.utf8), "\(name)")
        }
        #expect(try Self.stagingNames(config) == [])
        let served = try server.https(host, "/.well-known/apple-app-site-association")
        #expect(served.body == Array(Self.oldFiles(host)["apple-app-site-association", default: ""].utf8))
        #expect(server.stop() == 0)
    }

    /// The TCP states (hexadecimal, /proc/net/tcp) of the server's sockets for the connection from
    /// `clientPort` to `apiPort` on 127.0.0.1: "01" established, "08" close-wait.
    static func serverSideStates(apiPort: Int, clientPort: Int) -> [String] {
        guard let handle = FileHandle(forReadingAtPath: "/proc/net/tcp") else { return [] }
        let table = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        func address(_ port: Int) -> String {
            let hex = String(port, radix: 16, uppercase: true)
            return "0100007F:" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return table.split(separator: "\n").dropFirst().compactMap { row in
            let fields = row.split(separator: " ")
            guard fields.count > 3, fields[1] == address(apiPort), fields[2] == address(clientPort) else { return nil }
            return String(fields[3])
        }
    }
}
