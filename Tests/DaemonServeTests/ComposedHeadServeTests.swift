import DaemonTesting
import HTTPCore
import Hashing
import TestSupport
import Testing

/// The heads a served file's responses are composed from when answering, as a client receives
/// them on a real socket: byte for byte the lines each file once kept over HTTP/1.1, and the
/// same list in order over HTTP/2 (`ReferenceHeads`), for GET, HEAD, 304 and the gzip form.
@Suite("aasad serve: composed heads on the wire")
final class ComposedHeadServeTests {
    let config: TestConfig
    let server: TestDaemon
    let body: [UInt8]
    static let path = "/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        let detail = #"{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}"#
        body = Array(#"{"applinks": {"apps": [], "details": [\#(Array(repeating: detail, count: 40).joined(separator: ", "))]}}"#.utf8)
        try config.write("config/sites/a.test/apple-app-site-association", body)
        server = try TestDaemon(config: config)
    }

    /// The reference for the file as served: its Last-Modified read back from `head`.
    func reference(_ head: String) throws -> ReferenceHeads.File {
        let line = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("last-modified: ") })
        let time = try #require(HTTPDate.parse(Array(line.dropFirst(15).utf8)))
        return ReferenceHeads.File(
            length: body.count, etag: "\"\(Hex.string(Digest.sha256(body)).prefix(32))\"", lastModified: time)
    }

    /// One HTTP/1.1 exchange on the plain listener, the connection closed after it.
    func http1(_ method: String, _ fields: String = "") -> String {
        let request = "\(method) \(Self.path) HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\(fields)\r\n"
        return String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
    }

    @Test("HTTP/1.1: every line of GET, HEAD, 304 and the gzip form's 200 and 304")
    func http1Lines() throws {
        let get = http1("GET")
        let file = try reference(get)
        func expected(_ status: String, _ fields: [(name: String, value: String)], _ body: String) -> String {
            "HTTP/1.1 \(status)\r\n" + String(decoding: ReferenceHeads.http1(fields), as: UTF8.self) + "Connection: close\r\n\r\n" + body
        }
        func withoutDate(_ text: String) -> String {
            text.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("Date: ") }.joined(separator: "\r\n")
        }
        let text = String(decoding: body, as: UTF8.self)
        #expect(withoutDate(get) == expected("200 OK", ReferenceHeads.fields(file), text))
        #expect(withoutDate(http1("HEAD")) == expected("200 OK", ReferenceHeads.fields(file), ""))
        #expect(
            withoutDate(http1("GET", "If-None-Match: \(file.etag)\r\n"))
                == expected("304 Not Modified", ReferenceHeads.fields(file, notModified: true), ""))
        // The first request that accepts gzip queues the compression; later ones get the form.
        var gzip = ""
        #expect(
            eventually {
                gzip = http1("GET", "Accept-Encoding: gzip\r\n")
                return gzip.contains("Content-Encoding: gzip")
            })
        let head = try #require(gzip.split(separator: "\r\n\r\n", maxSplits: 1).first)
        let lengthLine = head.split(separator: "\r\n").first { $0.hasPrefix("Content-Length: ") }
        let length = try #require(lengthLine.flatMap { Int($0.dropFirst(16)) })
        let form = (length: length, etag: String(file.etag.dropLast()) + "-gz\"")
        #expect(withoutDate(String(head)) + "\r\n\r\n" == expected("200 OK", ReferenceHeads.fields(file, gzip: form), ""))
        #expect(
            withoutDate(http1("GET", "Accept-Encoding: gzip\r\nIf-None-Match: \(form.etag)\r\n"))
                == expected("304 Not Modified", ReferenceHeads.fields(file, gzip: form, notModified: true), ""))
    }

    /// curl's view of an HTTP/2 response's fields, in order, without `:status` and `date`.
    func http2(_ options: [String]) throws -> [String] {
        let out = try Tool.run(
            "curl",
            [
                "-sS", "--http2", "-D", "-", "-o", "/dev/null", "--cacert", config.developmentCA, "--resolve",
                "a.test:\(server.httpsPort):127.0.0.1", "https://a.test:\(server.httpsPort)\(Self.path)",
            ] + options)
        return out.text.split(separator: "\r\n").dropFirst().map(String.init).filter { !$0.hasPrefix("date: ") }
    }

    @Test("HTTP/2: every field, in order, of GET, HEAD, 304 and the gzip form's 200 and 304")
    func http2Fields() throws {
        let file = try reference(try http2([]).joined(separator: "\r\n"))
        #expect(try http2([]) == ReferenceHeads.http2(ReferenceHeads.fields(file)))
        #expect(try http2(["--head"]) == ReferenceHeads.http2(ReferenceHeads.fields(file)))
        #expect(try http2(["-H", "If-None-Match: \(file.etag)"]) == ReferenceHeads.http2(ReferenceHeads.fields(file, notModified: true)))
        var fields: [String] = []
        #expect(
            try eventually {
                fields = try http2(["-H", "Accept-Encoding: gzip"])
                return fields.contains("content-encoding: gzip")
            })
        let length = try #require(fields.first { $0.hasPrefix("content-length: ") }.flatMap { Int($0.dropFirst(16)) })
        let form = (length: length, etag: String(file.etag.dropLast()) + "-gz\"")
        #expect(fields == ReferenceHeads.http2(ReferenceHeads.fields(file, gzip: form)))
        #expect(
            try http2(["-H", "Accept-Encoding: gzip", "-H", "If-None-Match: \(form.etag)"])
                == ReferenceHeads.http2(ReferenceHeads.fields(file, gzip: form, notModified: true)))
    }
}
