import Testing

@testable import HTTP1

/// The parser's mode for the tenant API's listener (Sources/TenantAPI/Transport): bodies framed by
/// Content-Length are handed over for the caller to bound; the file server's mode still refuses.
@Suite struct HTTP1ParserBodyTests {
    private func parse(_ text: String, acceptsBodies: Bool) -> HTTP1Parser.Result {
        var parser = HTTP1Parser(acceptsBodies: acceptsBodies)
        return Array(text.utf8).withUnsafeBytes { parser.parse($0) }
    }

    @Test func theFileServersModeStillRefusesBodies() {
        #expect(parse("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", acceptsBodies: false) == .failed(.bodyNotAllowed))
        #expect(parse("PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", acceptsBodies: false) == .failed(.bodyNotAllowed))
    }

    @Test func bodiesModeHandsOverTheLengthAndMarksTransferEncoding() throws {
        let text = "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 0123\r\n\r\n"
        guard case .complete(let head) = parse(text, acceptsBodies: true) else {
            Issue.record("not parsed")
            return
        }
        let length = try #require(head.contentLength)
        #expect(String(decoding: Array(text.utf8)[length], as: UTF8.self) == "0123")
        #expect(!head.transferEncoding)
        guard case .complete(let chunked) = parse("PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", acceptsBodies: true)
        else {
            Issue.record("not parsed")
            return
        }
        #expect(chunked.transferEncoding)
        #expect(
            parse("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", acceptsBodies: true)
                == .failed(.badRequest("conflicting Content-Length fields")))
        #expect(
            parse("PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", acceptsBodies: true)
                == .failed(.badRequest("malformed Content-Length")))
    }

    @Test func forEachFieldWalksTheFieldsInOrderTrimmed() {
        let text = "\r\nGET /x HTTP/1.1\r\nHost: a\r\nX-A:  one \t\r\nx-b:\r\nX-A: two\r\n\r\n"
        let bytes = Array(text.utf8)
        var parser = HTTP1Parser(acceptsBodies: true)
        guard case .complete(let head) = bytes.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("not parsed")
            return
        }
        var fields: [String] = []
        bytes.withUnsafeBytes { b in
            HTTP1Parser.forEachField(b, head) { name, value in
                fields.append(String(decoding: bytes[name], as: UTF8.self) + "=" + String(decoding: bytes[value], as: UTF8.self))
            }
        }
        #expect(fields == ["Host=a", "X-A=one", "x-b=", "X-A=two"])
    }
}
