import Foundation
import TestSupport
import Testing

/// The request path under attack where the binary is needed: a pipeline's memory (the process's
/// resident size), and HTTP/2 streams and frames on a stop the client asks for with SIGTERM
/// (Fixtures/h2drain.py signals the process). (Single requests, pipelines and held streams are
/// tested on a daemon in this process: Tests/DaemonServeTests/RequestPathTests.swift.)
@Suite("aasad serve: hostile requests on the process")
final class RequestPathProcessTests {
    let config: TestConfig
    /// big.test's AASA file: about 100 KB, under Apple's 128 KB, above the 64 KB output high-water mark.
    let big: [UInt8]
    static let path = "/.well-known/apple-app-site-association"
    static let h2drain = AASAD.testDirectory.appendingPathComponent("Fixtures/h2drain.py").path

    init() throws {
        config = try TestConfig()
        big = TestConfig.largeAASA(atLeast: 100_000)
        try config.write("config/sites/big.test/apple-app-site-association", big)
    }

    @Test("a pipelining client that never reads is not read from, holds bounded memory, and is dropped at the write timeout")
    func pipelinedNeverReads() throws {
        let server = try RunningServer(config: config, extra: ["--write-timeout", "2"])
        let before = server.residentKilobytes
        let fd = try #require(Loopback.connect(port: server.httpPort, receiveBuffer: 4096))
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let request = Array("GET /apple-app-site-association HTTP/1.1\r\nHost: big.test\r\n\r\n".utf8)
        let batch = Array([[UInt8]](repeating: request, count: 1000).joined())
        // Send until the kernel refuses more: the server has stopped reading (back-pressure).
        // Without it the server would read, and buffer, everything: bounded here at 256 MB.
        var sent = 0
        var refusals = 0
        while refusals < 20 && sent < 256 << 20 {
            let n = Loopback.send(fd, batch)
            if n > 0 {
                sent += n
                refusals = 0
            } else {
                // The socket is full: wait for room, 20 ms at most; a refusal when none came.
                var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, 20) == 0 { refusals += 1 }
            }
        }
        #expect(refusals >= 20, "the server kept reading \(sent) bytes of requests while its responses were not read")
        let grown = server.residentKilobytes - before
        #expect(grown < 16 * 1024, "the server grew by \(grown) KB for one client")
        let metrics = try Metrics.wait(server) { $0["aasad_connection_timeouts_total", ["phase": "write"]] > 0 }
        #expect(metrics["aasad_connection_timeouts_total", ["phase": "write"]] == 1)
        #expect(metrics["aasad_connections_open", ["listener": "http"]] == 0)
        #expect(try server.http("big.test", "/apple-app-site-association").body == big)
    }

    @Test("HTTP/2 requests reset in the same read leave nothing behind: the server answers, then stops promptly")
    func resetInSameRead() throws {
        let server = try RunningServer(config: config, extra: ["--drain-timeout", "30"])
        let started = Date()
        let out = try Tool.run(
            "python3",
            [Self.h2drain, "\(server.httpsPort)", "a.test", Self.path, "\(server.process.processIdentifier)", "reset-flood", "150"])
        #expect(out.text.hasPrefix("ok"), "\(out.text) \(out.stderr.suffix(500))")
        server.process.waitUntilExit()
        let elapsed = Date().timeIntervalSince(started)
        #expect(server.process.terminationStatus == 0)
        // A functional bound: far below the 30 s drain timeout a leaked stream would wait for.
        #expect(elapsed < 15, "the stop took \(elapsed) s")
    }

    @Test("on a graceful stop, GOAWAY follows the frames a slow HTTP/2 reader has pending, never cuts into them")
    func goAwayAfterPendingFrames() throws {
        let server = try RunningServer(config: config, extra: ["--drain-timeout", "20"])
        let out = try Tool.run(
            "python3",
            [Self.h2drain, "\(server.httpsPort)", "big.test", Self.path, "\(server.process.processIdentifier)", "slow-reader", "60"])
        #expect(out.text.hasPrefix("ok 60 streams of [\(big.count)] bytes"), "\(out.text) \(out.stderr.suffix(500))")
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
    }
}
