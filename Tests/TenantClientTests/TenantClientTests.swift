import Foundation
import Outbound
import StrictJSON
import TenantClient
import TestSupport
import Testing

/// The client's argument checks, request paths and answer reading, without a server (the
/// client against hostile servers over real sockets: Tests/aasadTests/SiteClientTests.swift).
@Suite("TenantClient: arguments, paths and answers")
struct TenantClientTests {
    @Test("a base URL with a control byte, CR/LF, user info, a query, an escape or plain http off loopback is refused")
    func hostileBaseURLs() {
        for url in [
            "https://api.test\r\nX-Evil: 1", "https://api.test/\u{0}", "https://api .test", "https://user@api.test",
            "https://api.test/?q", "https://api.test/#f", "https://api.test/%2e%2e", "ftp://api.test", "api.test",
            "http://api.test:8444", "http://10.0.0.1:8444", "https://api.test/\u{7F}", "https://\u{00E9}.test",
            "https://api.test/" + String(repeating: "a", count: 2_048),
        ] {
            #expect(TenantClient.baseURLProblem(url) != nil, "\(url.debugDescription)")
        }
        for url in [
            "https://api.test:8444", "https://api.test/prefix/", "http://127.0.0.1:8444", "http://[::1]:1", "http://localhost:8444",
        ] {
            #expect(TenantClient.baseURLProblem(url) == nil, "\(url)")
        }
    }

    @Test("a host is checked by the API's own rule: what the API refuses never costs a request")
    func hostRuleIsTheAPIs() {
        // These passed the client's own former check and were refused only by the server.
        for host in ["127.0.0.1", "10.1.2.3", "*.com", "a.b.123"] {
            #expect(TenantClient.hostProblem(host) != nil, "\(host)")
        }
        for host in [
            "", "A.example", "a.example.", ".a.example", "a..example", "%2e%2e", "../etc", "a/b", "a.example\r\n", "a\u{0}.example",
            "-a.example", "a-.example", "a.*.example", "**.example.com", "\u{00E9}.example", String(repeating: "a", count: 64) + ".example",
        ] {
            let problem = TenantClient.hostProblem(host)
            #expect(problem != nil, "\(host.debugDescription)")
            // The message quotes the argument escaped: no raw control byte reaches the terminal.
            #expect(problem?.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } != true)
        }
        let label = String(repeating: "a", count: 63)
        let longest = [label, label, label, String(repeating: "a", count: 61)].joined(separator: ".")
        #expect(longest.utf8.count == 253)
        #expect(TenantClient.hostProblem(longest) == nil)
        #expect(TenantClient.hostProblem(longest + "a") != nil)
        for host in ["links.example.com", "*.example.com", "xn--bcher-kva.example", "a1-b.test"] {
            #expect(TenantClient.hostProblem(host) == nil, "\(host)")
        }
    }

    @Test("the token is bounded by the API's own bound, at N and N+1, and holds visible ASCII only")
    func tokenBound() {
        let bound = TenantClient.maximumTokenBytes
        #expect(TenantClient.tokenProblem(String(repeating: "t", count: bound)) == nil)
        #expect(TenantClient.tokenProblem(String(repeating: "t", count: bound + 1)) != nil)
        for token in ["a b", "a\r\nX: y", "a\u{0}", "\u{00E9}", "a\u{7F}"] {
            #expect(TenantClient.tokenProblem(token) != nil, "\(token.debugDescription)")
        }
    }

    @Test("an ETag is * or a quoted visible string of at most 256 bytes")
    func etags() {
        for etag in ["", "\"", "abc", "\"a\"b\"", "\"a b\"", "\"a\r\n\"", "W/\"a\""] {
            #expect(TenantClient.etagProblem(etag) != nil, "\(etag.debugDescription)")
        }
        #expect(TenantClient.etagProblem("*") == nil)
        #expect(TenantClient.etagProblem("\"" + String(repeating: "a", count: 254) + "\"") == nil)
        #expect(TenantClient.etagProblem("\"" + String(repeating: "a", count: 255) + "\"") != nil)
    }

    @Test("a cursor is percent-encoded into the list's query: nothing in it can add a parameter or a line")
    func listPath() {
        #expect(TenantClient.listPath(limit: 10, cursor: nil) == "/v1/sites?limit=10")
        #expect(
            TenantClient.listPath(limit: 5, cursor: "a&limit=1\r\n#x~._-Z9") == "/v1/sites?limit=5&cursor=a%26limit%3D1%0D%0A%23x~._-Z9")
        #expect(TenantClient.queryValue("\u{00E9}") == "%C3%A9")
    }

    @Test("a list walk follows at most maximumPages pages and cursors of at most maximumCursorBytes")
    func walkBounds() {
        let pages = TenantClient.maximumPages
        let cursor = String(repeating: "c", count: TenantClient.maximumCursorBytes)
        #expect(TenantClient.mayFollow(cursor, after: pages - 1))
        #expect(!TenantClient.mayFollow(cursor, after: pages))
        #expect(!TenantClient.mayFollow(cursor + "c", after: 1))
        #expect(TenantClient.nextCursor(Array(#"{"sites":[],"next":"abc"}"#.utf8)) == "abc")
        #expect(TenantClient.nextCursor(Array(#"{"sites":[]}"#.utf8)) == nil)
        #expect(TenantClient.nextCursor(Array(#"{"next":1}"#.utf8)) == nil)
        #expect(TenantClient.nextCursor(Array("not json".utf8)) == nil)
    }

    @Test("a list walk: one page unless all; the cursor sent encoded; a next cursor past the bounds stops the walk, not followed")
    func listWalk() throws {
        let long = String(repeating: "c", count: TenantClient.maximumCursorBytes + 1)
        let endless = try StandInServer(mode: "fixed", body: #"{"sites":[],"next":""# + long + #""}"#)
        let client = TenantClient(
            base: "http://127.0.0.1:\(endless.port)", token: "t", caFile: nil, timeoutSeconds: 10, userAgent: "test")
        var bodies: [[UInt8]] = []
        #expect(try client.list(limit: 5, all: false, cursor: nil) { bodies.append($0.body) } == (1, true))
        #expect(try client.list(limit: 5, all: true, cursor: nil) { bodies.append($0.body) } == (1, false))
        #expect(bodies.count == 2 && bodies.allSatisfy { String(decoding: $0, as: UTF8.self).contains(long) })
        // An answer that names no next page ends the walk; the page asked for is the cursor given.
        let echo = try StandInServer(mode: "echo")
        let paths = TenantClient(base: "http://127.0.0.1:\(echo.port)/", token: "t", caFile: nil, timeoutSeconds: 10, userAgent: "test")
        var asked: [String] = []
        #expect(try paths.list(limit: 7, all: true, cursor: "a&b") { asked.append(String(decoding: $0.body, as: UTF8.self)) } == (1, true))
        #expect(asked == [TenantClient.listPath(limit: 7, cursor: "a&b")])
    }

    @Test("an answer: a redirect is named escaped, never followed; a body that is no JSON is an escaped excerpt of 200 bytes")
    func answers() {
        var headers = ResponseHeaders()
        let added = headers.add(line: Array("Location: https://evil.test/\u{1B}[2J".utf8))
        #expect(added)
        guard case .redirect(301, let location) = TenantClient.read(status: 301, headers: headers, body: Array("{}".utf8)) else {
            Issue.record("a 301 was not read as a redirect")
            return
        }
        #expect(!location.unicodeScalars.contains { $0.value == 0x1B })

        let exactly = [UInt8](repeating: 0x78, count: TenantClient.excerptBytes)
        guard case .notJSON(502, let shown) = TenantClient.read(status: 502, headers: ResponseHeaders(), body: exactly) else {
            Issue.record("a body that is no JSON was not named")
            return
        }
        #expect(shown == String(repeating: "x", count: TenantClient.excerptBytes))
        guard case .notJSON(_, let cut) = TenantClient.read(status: 502, headers: ResponseHeaders(), body: exactly + [0x1B]) else {
            Issue.record("a body that is no JSON was not named")
            return
        }
        #expect(cut == shown + "...")

        guard case .json(204, nil) = TenantClient.read(status: 204, headers: ResponseHeaders(), body: []) else {
            Issue.record("an empty body was not read as no JSON value")
            return
        }
        guard
            case .json(422, let value?) = TenantClient.read(status: 422, headers: ResponseHeaders(), body: Array(#"{"problems":[]}"#.utf8))
        else {
            Issue.record("a JSON body was not parsed")
            return
        }
        #expect(value.objectMembers?.first?.key == "problems")
    }

    @Test("the PUT body: the API's bound at N and N+1, files as written, settings from YAML, hostile files refused")
    func requestBody() throws {
        let directory = try TemporaryDirectory()
        try directory.write("aasa.json", Array(#"{"applinks":{"details":[]}}"#.utf8))
        try directory.write("array.json", Array("[]".utf8))
        try directory.write("settings.yaml", Array("cache-control: max-age=60\naliases: [www.a.test]\n".utf8))
        try directory.write("page.html", Array("<p>\"hi\"\n</p>".utf8))
        try directory.write("latin1.html", [0x3C, 0xE9, 0x3E])
        try directory.write("bad.json", Array(#"{"a":1,}"#.utf8))
        let body = try SiteRequestBody.make(
            aasa: directory.path("aasa.json"), assetlinks: directory.path("array.json"), settings: directory.path("settings.yaml"),
            page: directory.path("page.html"))
        let value = try JSONParser.parse(body)
        #expect(value.objectMembers?.map(\.key) == ["aasa", "assetlinks", "settings", "page"])
        #expect(value.objectMembers?.last?.value.stringValue == "<p>\"hi\"\n</p>")

        func refused(_ aasa: String, page: String? = nil) -> String? {
            do {
                _ = try SiteRequestBody.make(aasa: aasa, assetlinks: nil, settings: nil, page: page)
                return nil
            } catch { return error.message }
        }
        #expect(refused(directory.path("array.json")) != nil)  // an array where an object is due
        #expect(refused(directory.path("bad.json"))?.contains(":1:") == true)  // not JSON: named with its line
        #expect(refused(directory.path("aasa.json"), page: directory.path("latin1.html")) != nil)
        #expect(refused(directory.path("missing.json")) != nil)
        #expect(refused(directory.path("")) != nil)  // a directory
        try FileManager.default.createSymbolicLink(atPath: directory.path("fifo-link"), withDestinationPath: "/dev/zero")
        #expect(refused(directory.path("fifo-link")) != nil)  // not a regular file: never read without end

        // The whole body at the API's bound and one byte past it: {"aasa":{"x":"…"}}.
        let wrapper = #"{"aasa":{"x":""}}"#.utf8.count
        for (size, fits) in [(SiteRequestBody.maximumBytes, true), (SiteRequestBody.maximumBytes + 1, false)] {
            let filler = String(repeating: "a", count: size - wrapper)
            try directory.write("big.json", Array(#"{"x":""#.utf8) + Array(filler.utf8) + Array(#""}"#.utf8))
            #expect((refused(directory.path("big.json")) == nil) == fits, "\(size)")
        }
    }
}
