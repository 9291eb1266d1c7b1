import Foundation
import Synchronization
import TestSupport
import Testing

/// A config directory for end-to-end tests, built fresh in a temporary directory:
/// - `a.test`: an AASA file and assetlinks.json; `www.a.test` is a symlink alias of it
/// - `*.w.test`: a wildcard site
/// - `own.test`: a site with its own RSA certificate (the default one is the development ECDSA one)
/// - `bad.test`: an invalid file, so not served
final class TestConfig {
    /// Removed with everything in it when the config is released.
    let directory: TemporaryDirectory
    var root: URL { directory.url }
    let aasa = Array(
        #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#.utf8)
    let wildcardAASA = Array(#"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.w", "paths": ["*"]}]}}"#.utf8)
    let ownAASA = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.own"]}}"#.utf8)
    let assetLinks = Array(
        #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example", "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
            .utf8)

    init() throws {
        directory = try TemporaryDirectory(prefix: "aasad-e2e")
        try write("config/sites/a.test/apple-app-site-association", aasa)
        try write("config/sites/a.test/assetlinks.json", assetLinks)
        try FileManager.default.createSymbolicLink(atPath: path("config/sites/www.a.test"), withDestinationPath: "a.test")
        try write("config/sites/*.w.test/apple-app-site-association", wildcardAASA)
        try write("config/sites/own.test/apple-app-site-association", ownAASA)
        try write("config/sites/bad.test/apple-app-site-association", Array(#"{"applinks": {"details": [],}}"#.utf8))
        // own.test's RSA certificate, self-signed: clients trust it with --cacert own.pem. The
        // process's shared pair: an RSA key per config cost a second of each test.
        try TestPKI.shared(["own.test"], key: .rsa).write(into: path("config/sites/own.test/tls"))
    }

    func path(_ relative: String) -> String { directory.path(relative) }

    func write(_ relative: String, _ bytes: [UInt8]) throws { try directory.write(relative, bytes) }

    var config: String { path("config") }
    var state: String { path("state") }
    var developmentCA: String { path("state/dev-tls/ca.pem") }
    var ownCA: String { path("config/sites/own.test/tls/cert.pem") }
}

/// `aasad serve` started on port 0 for one test, stopped with SIGTERM when the test ends.
final class RunningServer {
    let process = Process()
    let config: TestConfig
    private(set) var httpsPort = 0
    private(set) var httpPort = 0
    private(set) var adminPort = 0
    private let stdout = Pipe()
    private let stderr = Pipe()
    private(set) var stdoutText = ""
    /// Reads the server's log as it is written: a pipe nobody reads fills at 64 KB, and then the
    /// server's next log line blocks the thread that writes it (the config watcher in a long test).
    private var logDrain: PipeDrain?

    /// `fileLimit` starts the server under `ulimit -n`, to test what happens when descriptors run out;
    /// `softFileLimit` lowers only the soft limit (`ulimit -S -n`), which serve raises again.
    /// `standardError` replaces the pipe the log is read from (a test that closes it); `log()` is
    /// then empty.
    init(
        config: TestConfig, extra: [String] = [], fileLimit: Int? = nil, softFileLimit: Int? = nil, environment: [String: String] = [:],
        standardError: FileHandle? = nil
    ) throws {
        self.config = config
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let arguments =
            [
                "serve", "--config", config.config, "--state", config.state, "--https", "127.0.0.1:0", "--http", "127.0.0.1:0", "--threads",
                "2", "--admin", "127.0.0.1:0",
            ]
            + extra
        if fileLimit != nil || softFileLimit != nil {
            let ulimit = fileLimit.map { "ulimit -n \($0)" } ?? "ulimit -S -n \(softFileLimit ?? 0)"
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "\(ulimit) && exec \"$0\" \"$@\"", AASAD.binary.path] + arguments
        } else {
            process.executableURL = AASAD.binary
            process.arguments = arguments
        }
        process.standardOutput = stdout
        process.standardError = standardError ?? stderr
        try process.run()
        try waitUntilReady()
        if standardError == nil { logDrain = PipeDrain(stderr.fileHandleForReading) }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Reads standard output until the readiness line; fails after 30 s or if the process exits.
    private func waitUntilReady() throws {
        let handle = stdout.fileHandleForReading
        var buffer = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let data = handle.availableData
            if data.isEmpty {
                throw ServerError(
                    "aasad exited before it was ready: \(String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))"
                )
            }
            buffer += String(decoding: data, as: UTF8.self)
            if let line = buffer.split(separator: "\n").first(where: { $0.hasPrefix("aasad ready:") }) {
                stdoutText = buffer
                httpsPort = Self.port(in: line, key: "https=")
                httpPort = Self.port(in: line, key: "http=")
                adminPort = Self.port(in: line, key: "admin=")
                return
            }
        }
        throw ServerError("aasad was not ready within 30 s")
    }

    private static func port(in line: Substring, key: String) -> Int {
        guard let range = line.range(of: " " + key) ?? line.range(of: key) else { return 0 }
        let value = line[range.upperBound...].prefix { $0 != " " && $0 != "," }
        return Int(value.split(separator: ":").last ?? "") ?? 0
    }

    /// Stops with SIGTERM and returns the exit status.
    func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// What the server logged (read after it stopped).
    /// The server's resident memory, in kilobytes.
    var residentKilobytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    func log() -> String { logDrain?.wait() ?? "" }

    /// Polls the log written so far until it contains `text` (10 s at most): the readiness signal
    /// for something the server does in the background and only logs (a refused change).
    func waitForLog(_ text: String) -> Bool { eventually { logDrain?.current().contains(text) ?? false } }

    /// What the server has logged so far, without waiting for it to exit.
    func logSoFar() -> String { logDrain?.current() ?? "" }

    struct ServerError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    // MARK: - Clients

    struct HTTPResult {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var connects: Int
        /// `1.1` or `2`, as curl reports it.
        var version: String
    }

    /// curl over HTTPS with `host` resolved to the server, trusting the development CA (or `cacert`).
    func https(_ host: String, _ path: String, _ options: [String] = [], cacert: String? = nil) throws -> HTTPResult {
        try curl(
            [
                "--cacert", cacert ?? config.developmentCA, "--resolve", "\(host):\(httpsPort):127.0.0.1",
                "https://\(host):\(httpsPort)\(path)",
            ] + options)
    }

    /// curl to the admin listener.
    func admin(_ path: String) throws -> HTTPResult {
        try curl(["http://127.0.0.1:\(adminPort)\(path)"])
    }

    /// curl over plain HTTP with a Host header.
    func http(_ host: String, _ path: String, _ options: [String] = []) throws -> HTTPResult {
        try curl(["-H", "Host: \(host)", "http://127.0.0.1:\(httpPort)\(path)"] + options)
    }

    func curl(_ arguments: [String]) throws -> HTTPResult { try Self.curl(arguments, scratch: config) }

    /// curl with `arguments`, its response head written to a file in `scratch` (for servers that
    /// tests run in-process, as well as this one).
    static func curl(_ arguments: [String], scratch config: TestConfig) throws -> HTTPResult {
        let headerFile = config.path("headers-\(UUID().uuidString)")
        let out = try Tool.run(
            "curl", ["-sS", "--path-as-is", "-D", headerFile, "-w", "\n%{num_connects} %{http_version}", "--max-time", "10"] + arguments)
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        var body = out.stdout
        var connects = 0
        var version = ""
        if let newline = body.lastIndex(of: 10) {
            let trailer = String(decoding: body[(newline + 1)...], as: UTF8.self).split(separator: " ")
            connects = Int(trailer.first ?? "") ?? 0
            version = String(trailer.last ?? "")
            body = Array(body[..<newline])
        }
        let head = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        // With several requests, the last response's head counts.
        let blocks = head.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
        let lines = (blocks.last ?? "").components(separatedBy: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if out.status != 0 && status == 0 { throw ServerError("curl failed (\(out.status)): \(out.stderr)") }
        return HTTPResult(status: status, headers: headers, body: body, connects: connects, version: version)
    }

    /// Opens a plain TCP connection and leaves it open (the caller closes it).
    func openConnection() -> Int32 {
        Loopback.connect(port: httpPort) ?? -1
    }

    /// Sends raw bytes on a plain TCP connection and returns everything received until the server
    /// closes or `timeout` seconds pass.
    func raw(_ bytes: [UInt8], timeout: Double = 5, port: Int? = nil) -> [UInt8] {
        guard let fd = Loopback.connect(port: port ?? httpPort) else { return [] }
        defer { close(fd) }
        Loopback.setReceiveTimeout(fd, seconds: Int(timeout))
        if !bytes.isEmpty { Loopback.send(fd, bytes) }
        return Loopback.receiveAll(fd)
    }
}

/// Reads a pipe to its end on a thread of its own and keeps what it read.
final class PipeDrain: Sendable {
    private let bytes = Mutex(Data())
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                bytes.withLock { $0.append(data) }
            }
            done.signal()
        }.start()
    }

    /// What has been read so far, while the writer may still write.
    func current() -> String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Everything read, once the writer has closed the pipe (the process stopped).
    func wait() -> String {
        done.wait()
        done.signal()
        return bytes.withLock { String(decoding: $0, as: UTF8.self) }
    }
}

extension RunningServer {
    /// The SHA-256 fingerprint line of the certificate a new connection with this SNI name gets.
    func servedFingerprint(_ name: String) throws -> String {
        let handshake = try Tool.run("openssl", ["s_client", "-connect", "127.0.0.1:\(httpsPort)", "-servername", name], input: [])
        return try Tool.run("openssl", ["x509", "-noout", "-fingerprint", "-sha256"], input: handshake.stdout).text
    }
}

extension TestConfig {
    /// Makes a self-signed ECDSA pair whose subjectAltName lists `names` into `directory`/cert.pem
    /// and key.pem (written elsewhere first and renamed in, key then certificate, as a deploy
    /// tool would).
    func makePair(_ names: [String], into directory: String) throws {
        try TestPKI.make(names).write(into: directory)
    }
}
