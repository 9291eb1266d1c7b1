import Foundation
import Glibc
import TestSupport
import Testing

@testable import TenantAPI

/// The listener against hostile bytes and slow or greedy clients, over real loopback sockets.
@Suite struct ListenerHostileTests {
    // MARK: - Slow clients

    @Test func aHeadSentAByteAtATimeIsCutAtTheHeaderDeadline() throws {
        let server = try EchoListener(limits: .short(header: .seconds(1), idle: .seconds(30)))
        let client = try #require(RawClient(port: server.port))
        let head = Array("GET /slow HTTP/1.1\r\nHost: a\r\nX-Long: \(String(repeating: "a", count: 200))\r\n\r\n".utf8)
        let started = Date()
        var closed = false
        // One byte every 50 ms: each read makes progress, so only a deadline over the whole head
        // cuts it (200+ bytes would take over 10 s).
        for byte in head {
            if client.send([byte]) < 0 { break }
            var p = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, 50) > 0 {
                closed = true
                break
            }
        }
        #expect(closed)
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(server.handled == 0)
    }

    @Test func aConnectionThatSendsNothingIsCutAtTheHeaderDeadline() throws {
        let server = try EchoListener(limits: .short(header: .milliseconds(500), idle: .seconds(30)))
        let client = try #require(RawClient(port: server.port))
        let (bytes, closed) = client.readUntilClose(seconds: 10)
        #expect(closed)
        #expect(bytes.isEmpty)
    }

    @Test func aKeptAliveConnectionIsCutAtTheIdleDeadline() throws {
        let server = try EchoListener(limits: .short(header: .seconds(30), idle: .milliseconds(500)))
        let client = try #require(RawClient(port: server.port))
        client.send("GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
        let (bytes, closed) = client.readUntilClose(seconds: 10)
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [200])
    }

    @Test func aSlowBodyIsCutAtTheBodyDeadline() throws {
        let server = try EchoListener(limits: .short(body: .milliseconds(500)))
        let client = try #require(RawClient(port: server.port))
        client.send("PUT /v1/sites/a.example HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        let (bytes, closed) = client.readUntilClose(seconds: 10)
        #expect(closed)
        #expect(bytes.isEmpty)
        #expect(server.handled == 0)
    }

    @Test func aClientThatNeverReadsIsCutAtTheWriteDeadline() throws {
        let server = try EchoListener(limits: .short(write: .milliseconds(500)))
        let client = try #require(RawClient(port: server.port, receiveBuffer: 4096))
        // Four answers of 4 MB each: far more than the socket buffers on both sides hold.
        client.send(String(repeating: "GET /big/4194304 HTTP/1.1\r\nHost: a\r\n\r\n", count: 4))
        #expect(eventually { server.handled >= 1 })
        #expect(eventually { server.listener.openConnections == 0 })
    }

    // MARK: - Framing

    @Test func aBodyOverTheBoundIsRefusedBeforeItIsRead() throws {
        var limits = APIListenerLimits.short()
        limits.maximumBodyBytes = 100
        let server = try EchoListener(limits: limits)
        // N + 1: 413 at once, with no byte of the body sent.
        let over = try #require(RawClient(port: server.port))
        over.send("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n")
        let refused = over.readResponses(1, seconds: 5)
        #expect(refused.map(\.status) == [413])
        #expect(refused.first?.headers["connection"] == "close")
        #expect(refused.first?.text.contains("\"error\": \"too-large\"") == true)
        #expect(over.readUntilClose().closed)
        // N: taken and handed over whole.
        let at = try #require(RawClient(port: server.port))
        at.send("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n" + String(repeating: "b", count: 100))
        let taken = at.readResponses(1)
        #expect(taken.map(\.status) == [200])
        #expect(server.requests.last?.body == [UInt8](repeating: 98, count: 100))
        #expect(server.handled == 1)
    }

    @Test func a413ReachesAClientThatSendsItsBodyAnyway() throws {
        var limits = APIListenerLimits.short()
        limits.maximumBodyBytes = 100
        let server = try EchoListener(limits: limits)
        let client = try #require(RawClient(port: server.port))
        // No Expect: the body follows the head at once, more of it than the server reads.
        client.send("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4000000\r\n\r\n")
        let flags = fcntl(client.fd, F_GETFL)
        _ = fcntl(client.fd, F_SETFL, flags | O_NONBLOCK)
        let chunk = [UInt8](repeating: 120, count: 65536)
        for _ in 0..<16 where client.send(chunk) > 0 {}
        _ = fcntl(client.fd, F_SETFL, flags)
        let (bytes, _) = client.readUntilClose()
        #expect(RawResponse.parseAll(bytes).map(\.status) == [413])
        #expect(server.handled == 0)
    }

    @Test func expectContinueGetsAHundredOnlyWhenTheBodyWillBeTaken() throws {
        var limits = APIListenerLimits.short()
        limits.maximumBodyBytes = 100
        let server = try EchoListener(limits: limits)
        let refused = try #require(RawClient(port: server.port))
        refused.send("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 101\r\n\r\n")
        let (bytes, closed) = refused.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [413])

        let taken = try #require(RawClient(port: server.port))
        taken.send("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(taken.readResponses(1).map(\.status) == [100])
        taken.send("hello")
        let answers = taken.readResponses(1)
        #expect(answers.map(\.status) == [200])
        #expect(server.requests.last?.body == Array("hello".utf8))
    }

    @Test(arguments: [
        ("Content-Length: -1\r\n", 400), ("Content-Length: +5\r\n", 400), ("Content-Length: 5, 5\r\n", 400),
        ("Content-Length: 5\r\nContent-Length: 6\r\n", 400), ("Content-Length: 0x10\r\n", 400), ("Content-Length: \r\n", 400),
        ("Content-Length: 99999999999999999999999999999999\r\n", 413), ("Content-Length: 9223372036854775808\r\n", 413),
        ("Transfer-Encoding: chunked\r\n", 411), ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 411), ("", 411),
    ])
    func badBodyFramingIsRefused(fields: String, status: Int) throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("PUT /x HTTP/1.1\r\nHost: a\r\n\(fields)\r\nhello")
        let (bytes, closed) = client.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [status])
        #expect(server.handled == 0)
    }

    @Test func repeatedEqualContentLengthsAreOneLength() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 005\r\nContent-Length: 005\r\n\r\nhello")
        #expect(client.readResponses(1).map(\.status) == [200])
        #expect(server.requests.first?.body == Array("hello".utf8))
    }

    @Test(arguments: [
        "X: a\rb", "X: a\nb", "X: a\u{0}b", "X: a\u{1}b", "X: a\u{7F}b", "X\u{0}: a", "X : a", " X: a", "X: caf\u{E9}",
    ])
    func controlBytesInAFieldAreRefused(field: String) throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET /x HTTP/1.1\r\nHost: a\r\n\(field)\r\n\r\n")
        let (bytes, closed) = client.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [400])
        #expect(server.handled == 0)
    }

    @Test func aHeaderBlockOverTheBoundIs431AndOneAtItIsTaken() throws {
        var limits = APIListenerLimits.short()
        limits.maximumHeaderBytes = 1000
        let server = try EchoListener(limits: limits)
        let prefix = "GET /x HTTP/1.1\r\nHost: a\r\nX: "
        // Exactly 1000 bytes with the final CRLF CRLF, then 1001.
        let fill = 1000 - prefix.utf8.count - 4
        let at = try #require(RawClient(port: server.port))
        at.send(prefix + String(repeating: "v", count: fill) + "\r\n\r\n")
        #expect(at.readResponses(1).map(\.status) == [200])
        let over = try #require(RawClient(port: server.port))
        over.send(prefix + String(repeating: "v", count: fill + 1) + "\r\n\r\n")
        let (bytes, closed) = over.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [431])
        // A head that never ends is refused as soon as it passes the bound.
        let endless = try #require(RawClient(port: server.port))
        endless.send(prefix + String(repeating: "v", count: 2000))
        let (endlessBytes, endlessClosed) = endless.readUntilClose()
        #expect(endlessClosed)
        #expect(RawResponse.parseAll(endlessBytes).map(\.status) == [431])
        #expect(server.handled == 1)
    }

    @Test func aHandlerFieldWithACRIsRefusedWith500() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET /bad-header HTTP/1.1\r\nHost: a\r\n\r\n")
        let answers = client.readResponses(1)
        #expect(answers.map(\.status) == [500])
        #expect(answers.first?.headers["set-cookie"] == nil)
        #expect(answers.first?.headers["x-split"] == nil)
    }

    @Test func aTargetThatIsNotAPathIsRefused() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(client.readResponses(1).map(\.status) == [400])
        #expect(server.handled == 0)
    }
}
