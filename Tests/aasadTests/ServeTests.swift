import Foundation
import TestSupport
import Testing

/// What of `aasad serve` needs the process itself: signals (SIGHUP, SIGTERM and the exit status),
/// the descriptor limit (`ulimit`), systemd's notification socket with the process's pid, the
/// drain on SIGTERM, and the log format serve sets up. (Serving, TLS, timeouts and the admin
/// listener are tested on a daemon in the test process: Tests/DaemonServeTests/ServeTests.swift.)
@Suite("aasad serve: signals")
final class ServeSignalTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    static let paths = ["/.well-known/apple-app-site-association", "/apple-app-site-association"]

    @Test("SIGHUP picks up a new site; SIGTERM stops with status 0")
    func reloadAndStop() throws {
        // Its own server without the watcher: with it, the new site may be picked up before the
        // first request, and SIGHUP would prove nothing.
        let server = try RunningServer(config: config, extra: ["--no-watch"])
        try config.write("config/sites/new.test/apple-app-site-association", config.aasa)
        #expect(try server.http("new.test", Self.paths[0]).status == 404)
        server.signal(SIGHUP)
        #expect(try eventually { try server.http("new.test", Self.paths[0]).status == 200 })
        #expect(server.stop() == 0)
        #expect(server.log().contains("bad.test"))
    }
}

/// Kept on the binary: on an in-process daemon this test, in its earlier form (every client had
/// to be served), saw one or two of its twelve handshakes cut in about one run of three, where
/// the binary saw none in six runs; both were under heavy load, where a client's hello can
/// leave later than 0.7 s. It now fails only on a cut that is early by the server's own clock.
@Suite("aasad serve: timeouts never early")
final class TimeoutProcessTests {
    let config: TestConfig
    let server: RunningServer

    init() throws {
        config = try TestConfig()
        server = try RunningServer(config: config, extra: ["--request-timeout", "1", "--idle-timeout", "1", "--handshake-timeout", "1"])
    }

    @Test("a timeout never fires early: no client is cut less than 1 s after it connected to a 1 s timeout")
    func timeoutsNeverEarly() throws {
        // Deadlines used to count from the second, rounded down, of the loop's last clock read
        // (up to a one-second wait before the accept): a 1 s handshake timeout could fire at once.
        // 12 clients, started at different points of a second, each wait 0.7 s after connecting
        // (the sleeps are the input, not an order of events).
        // The server accepts after the client's connect returns, so a cut it makes on time comes
        // at least 1 s after that: an end of the connection sooner is early, whatever the load.
        // Under load a hello can leave after the deadline and be cut on time; that is not
        // counted against the server, but at least one client must be served.
        let script = """
            import socket, ssl, sys, threading, time
            port = int(sys.argv[1]); served = []; early = []; late = []
            def client(i):
                time.sleep(i * 0.083)
                start = None
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    start = time.monotonic()
                    time.sleep(0.7)
                    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
                    t = ctx.wrap_socket(s, server_hostname="a.test")
                    t.sendall(b"GET /apple-app-site-association HTTP/1.1\\r\\nHost: a.test\\r\\nConnection: close\\r\\n\\r\\n")
                    answer = t.recv(12).decode(errors="replace")
                    if answer.startswith("HTTP/1.1 200"):
                        served.append(answer)
                    else:
                        elapsed = time.monotonic() - start
                        (late if elapsed >= 1.0 else early).append("after %.3f s: %r" % (elapsed, answer))
                except Exception as e:
                    elapsed = time.monotonic() - start if start is not None else 0
                    (late if elapsed >= 1.0 else early).append("after %.3f s: %s" % (elapsed, e))
            threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
            [t.start() for t in threads]; [t.join() for t in threads]
            print(len(served), len(early), early, late)
            """
        let out = try Tool.run("python3", ["-c", script, String(server.httpsPort)])
        let counts = out.text.split(separator: " ").prefix(2).compactMap { Int($0) }
        #expect(counts.count == 2 && counts[0] >= 1 && counts[1] == 0, "\(out.text) \(out.stderr)")
    }
}

@Suite("aasad serve: running out of descriptors")
final class DescriptorLimitTests {
    @Test("EMFILE pauses accepting instead of spinning, and serving resumes when descriptors free up")
    func pausesOnEMFILE() throws {
        let config = try TestConfig()
        // Below DescriptorBudget.reserve: no per-worker cap, so accept meets EMFILE itself.
        let server = try RunningServer(config: config, fileLimit: 48)
        // More connections than the server has descriptors: the kernel completes them, accept fails.
        let held = (0..<80).map { _ in server.openConnection() }
        #expect(server.waitForLog("too many open files"), "accept never met EMFILE")
        held.forEach { _ = close($0) }
        #expect(
            eventually { (try? server.http("a.test", "/apple-app-site-association").status) == 200 }, "the server did not resume serving")
        #expect(server.stop() == 0)
        #expect(server.log().contains("too many open files"))
    }
}

@Suite("aasad serve: systemd readiness")
final class SystemdNotifyTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("READY=1 reaches $NOTIFY_SOCKET once serving, and STOPPING=1 on SIGTERM")
    func systemdNotify() throws {
        let path = config.path("notify.sock")
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        Loopback.setReceiveTimeout(fd, seconds: 10)
        let server = try RunningServer(config: config, environment: ["NOTIFY_SOCKET": path])
        func receive() -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        }
        let first = receive()
        #expect(first.hasPrefix("READY=1"), "\(first)")
        #expect(first.contains("MAINPID=\(server.process.processIdentifier)"))
        #expect(server.stop() == 0)
        #expect(receive() == "STOPPING=1")
    }
}

@Suite("aasad serve: graceful stop")
final class DrainTests {
    /// Whether a connection to `port` on loopback is refused: the listener is closed.
    static func listenerClosed(port: Int) -> Bool {
        guard let fd = Loopback.connect(port: port) else { return true }
        close(fd)
        return false
    }

    @Test("a request in flight when SIGTERM arrives is answered, with Connection: close, then the server exits 0")
    func inFlight() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config, extra: ["--drain-timeout", "5"])
        let fd = server.openConnection()
        defer { close(fd) }
        Loopback.send(fd, Array("GET /apple-app-site-association HTTP/1.1\r\nHo".utf8))
        // The server has read the request's first half...
        #expect(eventually(interval: 0.01) { Loopback.unreadByPeer(fd) == 0 }, "the server never read the request")
        server.signal(SIGTERM)
        // ...when it stops: its workers drain (each closes its listeners as it starts to) before
        // the second half arrives.
        #expect(eventually { Self.listenerClosed(port: server.httpPort) }, "the listener stayed open after SIGTERM")
        Loopback.send(fd, Array("st: a.test\r\n\r\n".utf8))
        Loopback.setReceiveTimeout(fd, seconds: 5)
        let reply = Loopback.receiveAll(fd)
        let text = String(decoding: reply, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK"), "\(text.prefix(100))")
        #expect(text.contains("Connection: close"))
        #expect(text.hasSuffix(String(decoding: config.aasa, as: UTF8.self)))
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
    }

    @Test("clients fetching all the time through SIGTERM see only complete answers; idle connections do not hold the stop")
    func underLoad() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config, extra: ["--drain-timeout", "5"])
        let loop = FetchLoop(port: server.httpPort, host: "a.test", allowing: [config.aasa])
        let idle = server.openConnection()  // never sends anything
        defer { close(idle) }
        // The clients have had answers and the idle connection was taken in before the stop.
        #expect(eventually { loop.count >= 10 })
        _ = try Metrics.wait(server) { $0["aasad_connections_open", ["listener": "http"]] >= 1 }
        let started = Date()
        server.signal(SIGTERM)
        server.process.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        let violations = loop.stop().filter { $0 != "no answer" }  // refused after the listener closed: never accepted
        #expect(violations.isEmpty, "\(violations.prefix(5))")
        #expect(server.process.terminationStatus == 0)
        #expect(elapsed < 4, "the stop waited \(elapsed) s")
        #expect(loop.count > 10)
    }
}

@Suite("aasad serve: logs")
struct LogFormatTests {
    @Test("--log-format json writes one JSON object per line, problems included")
    func jsonLines() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config, extra: ["--log-format", "json"])
        #expect(server.stop() == 0)
        let lines = server.log().split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["level"] != nil && object?["message"] != nil && object?["time"] != nil, "\(line)")
        }
        #expect(lines.contains { $0.contains("bad.test") && $0.contains("\"level\":\"error\"") })
    }
}
