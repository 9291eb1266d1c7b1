import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import TenantAPI

/// Keep-alive, pipelining, the connection bounds and stop(), over real loopback sockets.
@Suite struct ListenerConnectionTests {
    @Test func theHandlerSeesTheRequestAsSent() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("PUT /v1/sites/a.example?x=%2e HTTP/1.1\r\nHost: a\r\nX-Case:  Mixed\t \r\nContent-Length: 2\r\n\r\n{}")
        let answers = client.readResponses(1)
        #expect(answers.map(\.status) == [200])
        let request = try #require(server.requests.first)
        #expect(request.method == "PUT")
        #expect(request.target == "/v1/sites/a.example?x=%2e")
        #expect(request.header("x-case") == "Mixed")
        #expect(request.body == Array("{}".utf8))
        #expect(request.peer == "127.0.0.1")
        #expect(request.secure == false)
        let answer = try #require(answers.first)
        #expect(answer.headers["cache-control"] == "no-store")
        #expect(answer.headers["date"] != nil)
        #expect(answer.headers["connection"] == nil)
    }

    @Test func aHundredPipelinedRequestsAreAnsweredInOrder() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        var batch = ""
        for i in 0..<100 {
            batch +=
                i % 2 == 0
                ? "GET /r/\(i) HTTP/1.1\r\nHost: a\r\n\r\n" : "PUT /r/\(i) HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nb\(i % 10)b"
        }
        client.send(batch)
        let answers = client.readResponses(100)
        #expect(answers.count == 100)
        for (i, answer) in answers.enumerated() {
            #expect(answer.text.hasPrefix(i % 2 == 0 ? "GET /r/\(i)\n" : "PUT /r/\(i)\n"))
            if i % 2 == 1 { #expect(answer.text.hasSuffix("\n\nb\(i % 10)b")) }
        }
        #expect(server.handled == 100)
    }

    @Test func http10ClosesAfterItsAnswer() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /second HTTP/1.0\r\n\r\n")
        let (bytes, closed) = client.readUntilClose()
        #expect(closed)
        let answers = RawResponse.parseAll(bytes)
        #expect(answers.map(\.status) == [200])
        #expect(answers.first?.headers["connection"] == "close")
        #expect(server.handled == 1)
    }

    @Test func connectionCloseIsHonoured() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        let (bytes, closed) = client.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).count == 1)
    }

    @Test func theTotalBoundTakesNAndRefusesTheNextWith503() throws {
        var limits = APIListenerLimits.short()
        limits.maximumConnections = 3
        let server = try EchoListener(limits: limits)
        let held = (0..<3).compactMap { _ in RawClient(port: server.port) }
        #expect(held.count == 3)
        #expect(eventually { server.listener.openConnections == 3 })
        let refused = try #require(RawClient(port: server.port))
        let (bytes, closed) = refused.readUntilClose()
        #expect(closed)
        let answer = RawResponse.parseAll(bytes)
        #expect(answer.map(\.status) == [503])
        #expect(answer.first?.text.contains("\"error\": \"busy\"") == true)
        #expect(answer.first?.headers["date"] != nil)
        #expect(answer.first?.headers["connection"] == "close")
        #expect(server.listener.refusedConnections == 1)
        // A slot freed is taken again.
        held[0].send("GET /bye HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(held[0].readUntilClose().closed)
        #expect(eventually { server.listener.openConnections == 2 })
        let again = try #require(RawClient(port: server.port))
        again.send("GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(again.readResponses(1).map(\.status) == [200])
    }

    @Test func thePerPeerBoundTakesNFromOneAddressAndOthersStillConnect() throws {
        var limits = APIListenerLimits.short()
        limits.maximumConnections = 10
        limits.maximumConnectionsPerPeer = 2
        let server = try EchoListener(limits: limits)
        let held = (0..<2).compactMap { _ in RawClient(port: server.port, source: "127.0.0.1") }
        #expect(held.count == 2)
        #expect(eventually { server.listener.openConnections == 2 })
        let refused = try #require(RawClient(port: server.port, source: "127.0.0.1"))
        let (bytes, closed) = refused.readUntilClose()
        #expect(closed)
        #expect(RawResponse.parseAll(bytes).map(\.status) == [503])
        // Another peer address (all of 127.0.0.0/8 is loopback) still gets in.
        let other = try #require(RawClient(port: server.port, source: "127.0.0.2"))
        other.send("GET /other HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(other.readResponses(1).map(\.status) == [200])
        #expect(server.requests.last?.peer == "127.0.0.2")
    }

    @Test func stopClosesTheListenerAndEveryConnectionPromptly() throws {
        let server = try EchoListener(limits: .short(header: .seconds(60), idle: .seconds(60)))
        let idle = try #require(RawClient(port: server.port))
        idle.send("GET /kept HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(idle.readResponses(1).map(\.status) == [200])
        let midHead = try #require(RawClient(port: server.port))
        midHead.send("GET /half HTTP/1.1\r\nHost:")
        let silent = try #require(RawClient(port: server.port))
        #expect(eventually { server.listener.openConnections == 3 })
        let started = Date()
        server.listener.stop()
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(server.listener.openConnections == 0)
        for client in [idle, midHead, silent] { #expect(client.readUntilClose(seconds: 2).closed) }
        #expect(RawClient(port: server.port) == nil)
    }

    @Test func stopWaitsForABlockedHandlerOnlyUpToItsBound() throws {
        let release = DispatchSemaphore(value: 0)
        var limits = APIListenerLimits.short()
        limits.stopTimeout = .milliseconds(500)
        let entered = Mutex(false)
        let api = try APIListener(
            listen: "127.0.0.1:0", tls: nil, limits: limits,
            handler: { _ in
                entered.withLock { $0 = true }
                // Blocks until the test lets it go (after stop returned).
                release.wait()
                return APIResponse(status: 200)
            }, logger: Logger(label: "api-test"))
        api.start()
        let client = try #require(RawClient(port: api.port))
        client.send("GET /block HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(eventually { entered.withLock { $0 } })
        let started = Date()
        api.stop()
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.4 && waited < 3)
        #expect(api.openConnections == 1)
        release.signal()
        // The handler's connection ends on its own once the handler returns.
        #expect(eventually { api.openConnections == 0 })
        #expect(client.readUntilClose(seconds: 5).closed)
    }
}
