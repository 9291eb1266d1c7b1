import Testing

@testable import HTTP1

/// Parses `text` fed in two pieces split at `split` (the second piece appended to the first), as a
/// socket might deliver it, and returns the final result with the text for reading ranges.
private func parse(_ text: String, split: Int? = nil) -> HTTP1Parser.Result {
    let bytes = Array(text.utf8)
    var parser = HTTP1Parser()
    if let split, split < bytes.count {
        let first = Array(bytes[..<split])
        let r = first.withUnsafeBytes { parser.parse($0) }
        switch r {
        case .incomplete: break
        default: return r  // an error can be detected early; a complete head cannot precede its end
        }
    }
    return bytes.withUnsafeBytes { parser.parse($0) }
}

private func field(_ text: String, _ range: Range<Int>?) -> String? {
    range.map { String(decoding: Array(text.utf8)[$0], as: UTF8.self) }
}

@Suite("HTTP/1.1 request parser (RFC 9112)")
struct HTTP1ParserTests {
    static let requests = [
        "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: a.example\r\n\r\n",
        "HEAD /apple-app-site-association?x=1 HTTP/1.1\r\nhost: A.Example:8443\r\nUser-Agent: AASA-Bot/1.0.0\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.0\r\n\r\n",
        "GET http://a.example/x?y HTTP/1.1\r\nHost: ignored.example\r\n\r\n",
        "\r\nGET / HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br, gzip;q=0.5\r\nIf-None-Match: \"abc\"\r\n\r\n",
    ]

    @Test("every request parses the same whatever the split point", arguments: requests)
    func everySplitPoint(_ text: String) {
        let whole = parse(text)
        guard case .complete = whole else {
            Issue.record("\(text.debugDescription): \(whole)")
            return
        }
        for split in 1..<text.utf8.count {
            #expect(parse(text, split: split) == whole, "split at \(split)")
        }
    }

    @Test("a partial head is incomplete, never an error", arguments: requests)
    func prefixesAreIncomplete(_ text: String) {
        let bytes = Array(text.utf8)
        for n in 0..<bytes.count {
            var p = HTTP1Parser()
            let r = Array(bytes[..<n]).withUnsafeBytes { p.parse($0) }
            #expect(r == .incomplete, "prefix of \(n) bytes: \(r)")
        }
    }

    @Test("fields are read: method, path, host, version, connection, conditionals, encodings")
    func readsFields() throws {
        let text = Self.requests[1]
        guard case .complete(let h) = parse(text) else { Issue.record("not complete"); return }
        #expect(h.method == .head)
        #expect(field(text, h.path) == "/apple-app-site-association")
        #expect(field(text, h.target) == "/apple-app-site-association?x=1")
        #expect(field(text, h.host) == "A.Example:8443")
        #expect(field(text, h.userAgent) == "AASA-Bot/1.0.0")
        #expect(h.connection.close && !h.keepAlive)
        #expect(h.length == text.utf8.count)
    }

    @Test("absolute-form: the target's authority is the host (RFC 9112 §3.2.2)")
    func absoluteForm() {
        let text = Self.requests[3]
        guard case .complete(let h) = parse(text) else { Issue.record("not complete"); return }
        #expect(field(text, h.host) == "a.example")
        #expect(field(text, h.path) == "/x")
    }

    @Test(
        "keep-alive defaults: on for 1.1, off for 1.0 unless asked",
        arguments: [
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false),
            ("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n", false),
            ("GET / HTTP/1.0\r\n\r\n", false),
            ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ])
    func keepAlive(_ text: String, _ expected: Bool) {
        guard case .complete(let h) = parse(text) else { Issue.record("not complete"); return }
        #expect(h.keepAlive == expected)
    }

    @Test(
        "gzip is accepted unless its weight is zero",
        arguments: [
            ("gzip", true), ("br, gzip;q=0.5", true), ("gzip;q=0", false), ("gzip; q=0.000", false), ("*", true),
            ("*, gzip;q=0", false), ("identity", false), ("x-gzip", true), ("GZIP", true), ("deflate", false),
        ])
    func acceptEncoding(_ value: String, _ expected: Bool) {
        guard case .complete(let h) = parse("GET / HTTP/1.1\r\nHost: a\r\nAccept-Encoding: \(value)\r\n\r\n") else {
            Issue.record("not complete")
            return
        }
        #expect(h.acceptsGzip == expected)
    }

    static let malformed: [(String, Int)] = [
        ("GET / HTTP/1.1\r\n\r\n", 400),  // no Host
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),  // two Hosts
        ("GET / HTTP/1.1\nHost: a\n\n", 400),  // bare LF
        ("GET / HTTP/1.1\rHost: a\r\n\r\n", 400),  // bare CR
        ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),  // two spaces
        ("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        ("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505),
        ("GET / HTTQ/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / http/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET a HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),  // space before colon
        ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),  // obs-fold
        ("GET / HTTP/1.1\r\nHost: a\r\nX: a\u{1}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a:x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", 413),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 00\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 413),
        ("\u{16}\u{3}\u{1}\u{0}\u{a5}\u{1}\u{0}\u{0}\r\n\r\n", 400),  // a TLS ClientHello on the plain port
    ]

    @Test("malformed requests are refused with their status", arguments: malformed)
    func refuses(_ text: String, _ status: Int) {
        guard case .failed(let error) = parse(text) else {
            Issue.record("accepted \(text.debugDescription)")
            return
        }
        #expect(error.status == status, "\(text.debugDescription): \(error)")
    }

    @Test("Content-Length: 0 is not a body")
    func zeroLength() {
        guard case .complete = parse("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n") else { Issue.record("refused"); return }
    }

    private func requestLine(length: Int) -> String {
        let path = "/" + String(repeating: "a", count: length - "GET / HTTP/1.1".utf8.count)
        return "GET \(path) HTTP/1.1"
    }

    @Test("a request line of the maximum length is accepted; one byte more is 414")
    func requestLineBound() {
        let n = HTTP1Parser.maximumRequestLineLength
        guard case .complete = parse(requestLine(length: n) + "\r\nHost: a\r\n\r\n") else { Issue.record("refused at N"); return }
        #expect(parse(requestLine(length: n + 1) + "\r\nHost: a\r\n\r\n") == .failed(.requestLineTooLong))
        // Without its end yet: refused as soon as it is too long.
        #expect(parse(requestLine(length: n + 1)) == .failed(.requestLineTooLong))
    }

    private func head(totalLength: Int) -> String {
        let base = "GET / HTTP/1.1\r\nHost: a\r\nX: \r\n\r\n"
        return "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: totalLength - base.utf8.count) + "\r\n\r\n"
    }

    @Test("a head of the maximum size is accepted; one byte more is 431")
    func headBound() {
        let n = HTTP1Parser.maximumHeadLength
        #expect(head(totalLength: n).utf8.count == n)
        guard case .complete = parse(head(totalLength: n)) else { Issue.record("refused at N"); return }
        #expect(parse(head(totalLength: n + 1)) == .failed(.headersTooLarge))
    }

    @Test("the maximum number of fields is accepted; one more is 431")
    func fieldCountBound() {
        let n = HTTP1Parser.maximumHeaderCount
        let fields = (1..<n).map { "X-\($0): v\r\n" }.joined()
        guard case .complete = parse("GET / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n") else { Issue.record("refused at N"); return }
        #expect(parse("GET / HTTP/1.1\r\nHost: a\r\n" + fields + "X: v\r\n\r\n") == .failed(.headersTooLarge))
    }

    @Test("pipelined requests parse one after the other")
    func pipelined() {
        let text = Self.requests[0] + Self.requests[1]
        let bytes = Array(text.utf8)
        var parser = HTTP1Parser()
        guard case .complete(let first) = bytes.withUnsafeBytes({ parser.parse($0) }) else { Issue.record("first"); return }
        parser.reset()
        let rest = Array(bytes[first.length...])
        guard case .complete(let second) = rest.withUnsafeBytes({ parser.parse($0) }) else { Issue.record("second"); return }
        #expect(second.method == .head)
        #expect(first.length + second.length == bytes.count)
    }
}
