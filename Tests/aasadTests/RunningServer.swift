import Foundation
import Synchronization
import TestSupport
import Testing

/// `aasad serve` started on port 0 for one test, stopped with SIGTERM when the test ends.
final class RunningServer {
    let process = Process()
    let config: TestConfig
    private(set) var httpsPort = 0
    private(set) var httpPort = 0
    private(set) var adminPort = 0
    /// Every HTTPS and plain listener's port from the ready line (a flag adds to the defaults).
    private(set) var listenerPorts: [Int] = []
    /// The tenant API's port from the ready line (`api=`), 0 when it is off: a test starts the
    /// API on `127.0.0.1:0` and reads the port here, never picking a free one first.
    private(set) var apiPort = 0
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
                apiPort = Self.port(in: line, key: "api=")
                listenerPorts = Self.ports(in: line, key: "https=") + Self.ports(in: line, key: "http=")
                return
            }
        }
        throw ServerError("aasad was not ready within 30 s")
    }

    private static func port(in line: Substring, key: String) -> Int { ports(in: line, key: key).first ?? 0 }

    /// The ports of `key`'s comma-separated addresses.
    private static func ports(in line: Substring, key: String) -> [Int] {
        guard let range = line.range(of: " " + key) ?? line.range(of: key) else { return [] }
        let value = line[range.upperBound...].prefix { $0 != " " }
        return value.split(separator: ",").map { Int($0.split(separator: ":").last ?? "") ?? 0 }
    }

    /// Throws unless every socket on the HTTPS and plain ports is this server's
    /// (`Loopback.listener(port:isOwnedBy:)`): for ports a test picked (pebble's tlsPort and
    /// httpPort), which another test's process may have taken meanwhile, with SO_REUSEPORT on both
    /// sides (Sources/Reactor/Socket.swift) so that aasad's bind did not fail. `replicas` are
    /// servers the test started on the same ports on purpose.
    func requireOwnListeners(sharedWith replicas: [RunningServer] = []) throws {
        let owners = [process.processIdentifier] + replicas.map(\.process.processIdentifier)
        for port in listenerPorts where port != 0 {
            guard Loopback.listener(port: port, isOwnedBy: owners) == true else {
                throw ServerError("port \(port) is shared with a socket of another process")
            }
        }
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

    /// A response as curl saw it (TestSupport's, shared with the in-process tests).
    typealias HTTPResult = TestSupport.HTTPResult

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
        try Curl.run(arguments, scratch: config.root.path)
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

extension RunningServer: AdminPages {
    /// The SHA-256 fingerprint line of the certificate a new connection with this SNI name gets.
    func servedFingerprint(_ name: String) throws -> String {
        let handshake = try Tool.run("openssl", ["s_client", "-connect", "127.0.0.1:\(httpsPort)", "-servername", name], input: [])
        return try Tool.run("openssl", ["x509", "-noout", "-fingerprint", "-sha256"], input: handshake.stdout).text
    }
}
