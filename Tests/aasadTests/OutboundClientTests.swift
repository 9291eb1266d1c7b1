import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Outbound

/// The outbound client's checks of what reaches a request head, without a network.
@Suite("Outbound client: request checks")
struct OutboundClientTests {
    @Test(
        "requests that would put control bytes or a non-https URL on the wire are refused",
        arguments: [
            OutboundRequest(url: "http://example.com/"), OutboundRequest(url: "https://example.com/\r\nX-Injected: 1"),
            OutboundRequest(url: "https://exa mple.com/"), OutboundRequest(url: "file:///etc/passwd"),
        ])
    func refusedURLs(_ request: OutboundRequest) {
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
    }

    @Test("field names must be tokens, values and the User-Agent free of CR, LF and NUL; connect-to entries of visible bytes")
    func refusedFields() {
        var request = OutboundRequest(url: "https://example.com/")
        request.fields = [(name: "Accept", value: "a\r\nX-Injected: 1")]
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
        request.fields = [(name: "Bad Name", value: "x")]
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
        request.fields = []
        request.userAgent = "aasad\u{0}"
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
        request.userAgent = nil
        request.connectTo = ["a:443:b :443"]
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
        request.connectTo = ["a.test:443:127.0.0.1:8443"]
        request.fields = [(name: "Accept", value: "application/json\tq=1")]
        #expect(throws: Never.self) { try OutboundClient.check(request) }
    }

    @Test(
        "the host of a URL, for the certificate's name check",
        arguments: [
            ("https://Example.COM/x", "example.com"), ("https://example.com:8443/x", "example.com"), ("https://example.com", "example.com"),
            ("https://example.com?q", "example.com"), ("https://[::1]:8443/", "::1"),
        ])
    func host(_ url: String, _ host: String) {
        #expect(OutboundClient.host(of: url) == host)
    }

    @Test(
        "plain http only when allowed, to a loopback literal or localhost exactly, without user info or connect-to",
        arguments: [
            ("http://127.0.0.1:8444/v1/sites", true), ("http://127.255.255.255/", true), ("http://[::1]:8444/", true),
            ("http://localhost:8444/", true), ("HTTP://127.0.0.1/", true), ("http://127.255.255.256/", false),
            ("http://128.0.0.1/", false), ("http://127.1/", false), ("http://127.0.0.01/", false), ("http://0x7f.0.0.1/", false),
            ("http://127.0.0.1:80@example.com/", false), ("http://example.com@127.0.0.1/", false), ("http://[::2]/", false),
            ("http://[::1]x/", false), ("http://127.0.0.1:123456/", false), ("http://127.0.0.1.example.com/", false),
            ("http://localhost.example.com/", false), ("http://10.0.0.1/", false),
        ])
    func loopbackHTTP(_ url: String, _ allowed: Bool) {
        var request = OutboundRequest(.put, url: url)
        #expect(throws: OutboundError.self) { try OutboundClient.check(request) }
        request.allowsPlainHTTPToLoopback = true
        #expect(OutboundClient.isLoopbackHTTP(request) == allowed)
        request.connectTo = ["localhost:8444:example.com:80"]
        #expect(!OutboundClient.isLoopbackHTTP(request))
    }
}

/// A listener on loopback that answers each connection with `answer`, closes it, and counts it.
private final class CountingListener: Sendable {
    private final class Counter: Sendable { let value = Mutex(0) }
    let port: Int
    private let fd: Int32
    private let accepted = Counter()
    var count: Int { accepted.value.withLock { $0 } }

    init(answer: [UInt8]) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listener >= 0, bound, listen(listener, 16) == 0 else { throw CocoaError(.featureUnsupported) }
        fd = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        let counter = accepted
        Thread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                counter.value.withLock { $0 += 1 }
                Loopback.setReceiveTimeout(client, seconds: 2)
                var head = [UInt8](repeating: 0, count: 4096)
                _ = recv(client, &head, head.count, 0)
                _ = Loopback.send(client, answer)
                close(client)
            }
        }.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

@Suite("Outbound client: plain HTTP never through a proxy")
struct OutboundProxyTests {
    /// libcurl reads http_proxy from the environment: a request to loopback (the API client's
    /// token) or to a pinned address (the ownership check) must not go through it.
    @Test func plainHTTPIgnoresTheEnvironmentsProxy() throws {
        let origin = try CountingListener(answer: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
        let proxy = try CountingListener(answer: Array("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        defer {
            origin.stop()
            proxy.stop()
        }
        // Only plain HTTP is sent this way, so other tests' https requests in this process are not
        // affected while it is set.
        setenv("http_proxy", "http://127.0.0.1:\(proxy.port)", 1)
        defer { unsetenv("http_proxy") }
        let client = try OutboundClient()
        var loopback = OutboundRequest(url: "http://127.0.0.1:\(origin.port)/v1/sites")
        loopback.allowsPlainHTTPToLoopback = true
        #expect(try client.perform(loopback).body == Array("ok".utf8))
        var pinned = OutboundRequest(url: "http://customer.example:\(origin.port)/.well-known/aasad-verify/t")
        pinned.pinsPlainHTTP = true
        pinned.connectTo = ["customer.example:\(origin.port):127.0.0.1:\(origin.port)"]
        #expect(try client.perform(pinned).body == Array("ok".utf8))
        #expect(proxy.count == 0)
        #expect(origin.count == 2)
    }
}
