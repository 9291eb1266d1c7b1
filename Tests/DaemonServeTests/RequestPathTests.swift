import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The request path under attack, on a daemon in this process: single requests that stopped the
/// process, pipelines that stalled, HTTP/2 streams that outlived their reset. (What needs the
/// binary, its memory and the stop the client asks for with a signal, is in
/// Tests/aasadTests/RequestPathTests.swift.)
@Suite("aasad serve: hostile requests")
final class RequestPathTests {
    let config: TestConfig
    /// big.test's AASA file: about 100 KB, under Apple's 128 KB, above the 64 KB output high-water mark.
    let big: [UInt8]
    static let path = "/.well-known/apple-app-site-association"
    /// The If-Modified-Since that trapped in the date parser (a year converted to Int32).
    static let killerDate = "Sun, 06 Nov 3000000000 08:49:37 GMT"

    init() throws {
        config = try TestConfig()
        big = TestConfig.largeAASA(atLeast: 100_000)
        try config.write("config/sites/big.test/apple-app-site-association", big)
    }

    @Test("an If-Modified-Since with a ten-digit year is ignored over HTTP/1.1 and HTTP/2, and the server stays up")
    func hostileDate() throws {
        let server = try TestDaemon(config: config)
        let request = "GET \(Self.path) HTTP/1.1\r\nHost: a.test\r\nIf-Modified-Since: \(Self.killerDate)\r\nConnection: close\r\n\r\n"
        let reply = String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"), "\(reply.prefix(200))")
        #expect(reply.hasSuffix(String(decoding: config.aasa, as: UTF8.self)))
        for date in [Self.killerDate, "Sun, 06 Nov 99999999999999999999 08:49:37 GMT", "Sunday, 06-Nov-9999999999 08:49:37 GMT"] {
            let h2 = try? server.https("a.test", Self.path, ["--http2", "-H", "If-Modified-Since: \(date)"])
            #expect(h2?.status == 200 && h2?.version == "2", "\(date)")
            #expect(h2?.body == config.aasa)
        }
        #expect((try? server.admin("/healthz").status) == 200, "the daemon stopped")
        #expect((try? server.http("a.test", Self.path).status) == 200, "the server is still serving")
    }

    @Test("200 pipelined GETs of a 100 KB file sent in one write all get complete answers")
    func pipelinedLargeResponses() throws {
        let server = try TestDaemon(config: config)
        let fd = try #require(Loopback.connect(port: server.httpPort))
        defer { close(fd) }
        let request = "GET /apple-app-site-association HTTP/1.1\r\nHost: big.test\r\n\r\n"
        let last = "GET /apple-app-site-association HTTP/1.1\r\nHost: big.test\r\nConnection: close\r\n\r\n"
        let pipeline = Array((String(repeating: request, count: 199) + last).utf8)
        #expect(Loopback.send(fd, pipeline) == pipeline.count)
        Loopback.setReceiveTimeout(fd, seconds: 10)
        let reply = Loopback.receiveAll(fd)
        var offset = 0
        var answers = 0
        while offset < reply.count, let response = HTTP1Response(reply, at: offset) {
            #expect(response.status == 200)
            #expect(reply[response.body] == big[...], "response \(answers) is not the file")
            offset = response.body.upperBound
            answers += 1
        }
        #expect(answers == 200, "\(answers) of 200 answers in \(reply.count) bytes")
        #expect(offset == reply.count, "bytes after the last complete response")
    }

    @Test("HTTP/2 streams whose END_STREAM never comes are cut off at the request timeout, PINGs or not")
    func heldStreams() throws {
        let server = try TestDaemon(config: config, flags: ["--request-timeout", "2"])
        let script = TestConfig.fixtures.appendingPathComponent("h2abuse.py").path
        // A functional bound: the client gives up after 12 s; the server must close at about 2 s.
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", "held-streams-12"])
        #expect(out.text.hasPrefix("ok"), "\(out.text) \(out.stderr.suffix(300))")
        #expect(try server.https("a.test", Self.path, ["--http2"]).status == 200)
    }

    @Test("HTTP/2 streams reset before the request timeout and opened again are still cut off at it")
    func resetAndReopenedStreams() throws {
        let server = try TestDaemon(config: config, flags: ["--request-timeout", "2"])
        let script = TestConfig.fixtures.appendingPathComponent("h2abuse.py").path
        // A functional bound: the client gives up after 8 s; the server must close at about 2 s.
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", "reset-reopen-8"])
        #expect(out.text.hasPrefix("ok"), "\(out.text) \(out.stderr.suffix(300))")
        #expect(try server.https("a.test", Self.path, ["--http2"]).status == 200)
    }

}

/// One HTTP/1.1 response found in received bytes: its status and where its body is (by
/// Content-Length). Nil when the bytes at `offset` are not a complete response.
struct HTTP1Response {
    var status: Int
    var body: Range<Int>

    init?(_ bytes: [UInt8], at offset: Int) {
        let end = Array("\r\n\r\n".utf8)
        guard let headEnd = bytes[offset...].firstRange(of: end)?.upperBound else { return nil }
        let head = String(decoding: bytes[offset..<headEnd], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { return nil }
        let length =
            lines.first { $0.lowercased().hasPrefix("content-length:") }.flatMap {
                Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces))
            }
            ?? 0
        guard headEnd + length <= bytes.count else { return nil }
        self.status = status
        body = headEnd..<(headEnd + length)
    }
}
