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
