import Testing

@testable import AASA

@Suite("URL splitting (spec §6 step 1)")
struct LinkURLTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let input: String
        let host: String?
        let path: String
        let query: String?
        let fragment: String?
        var testDescription: String { input }
    }

    static let rows: [Row] = [
        Row(input: "https://example.com/a/b?x=1#f", host: "example.com", path: "/a/b", query: "x=1", fragment: "f"),
        Row(input: "https://example.com", host: "example.com", path: "", query: nil, fragment: nil),
        Row(input: "https://example.com/", host: "example.com", path: "/", query: nil, fragment: nil),
        Row(input: "https://example.com#coupon", host: "example.com", path: "", query: nil, fragment: "coupon"),
        Row(input: "https://example.com/?", host: "example.com", path: "/", query: "", fragment: nil),
        Row(input: "HTTPS://User:pw@Example.COM:8443/P", host: "example.com", path: "/P", query: nil, fragment: nil),
        Row(input: "http://example.com./x", host: "example.com", path: "/x", query: nil, fragment: nil),
        Row(input: "https://[::1]:443/x", host: "[::1]", path: "/x", query: nil, fragment: nil),
        Row(input: "https://e.com/a?b#c?d#e", host: "e.com", path: "/a", query: "b", fragment: "c?d#e"),
        Row(input: "/buy/1?ref=x", host: nil, path: "/buy/1", query: "ref=x", fragment: nil),
        Row(input: "https://e.com/café latte", host: "e.com", path: "/caf%C3%A9%20latte", query: nil, fragment: nil),
        Row(input: "https://e.com/a%2Fb", host: "e.com", path: "/a%2Fb", query: nil, fragment: nil),
        Row(input: "https://e.com/<x>", host: "e.com", path: "/%3Cx%3E", query: nil, fragment: nil),
    ]

    @Test("splits into host, path, query and fragment, encoding what a URL cannot carry", arguments: rows)
    func splits(_ r: Row) throws {
        let url = try LinkURL(parsing: r.input)
        #expect(url.host == r.host)
        #expect(url.path == r.path)
        #expect(url.query == r.query)
        #expect(url.fragment == r.fragment)
    }

    @Test("only http and https URLs are universal links", arguments: ["ftp://e.com/x", "mailto:a@b.c", "myapp://x"])
    func refusesOtherSchemes(_ input: String) {
        #expect(throws: LinkURL.ParseError.self) { try LinkURL(parsing: input) }
    }

    @Test("text that is not a URL is refused", arguments: ["example.com/x", "", "https:/x", "//e.com/x", "https:///x"])
    func refusesNonURLs(_ input: String) {
        #expect(throws: LinkURL.ParseError.self) { try LinkURL(parsing: input) }
    }

    @Test("a URL of the maximum length is accepted and one byte more is refused")
    func lengthBound() throws {
        let base = "https://e.com/"
        let atLimit = base + String(repeating: "a", count: LinkURL.maximumLength - base.utf8.count)
        _ = try LinkURL(parsing: atLimit)
        #expect(throws: LinkURL.ParseError.tooLong(LinkURL.maximumLength + 1)) { try LinkURL(parsing: atLimit + "a") }
    }

    @Test("percent-decoding is UTF-8, leaves broken escapes alone and keeps + as +")
    func decoding() {
        #expect(LinkURL.percentDecode("caf%C3%A9") == "café")
        #expect(LinkURL.percentDecode("caf%c3%a9") == "café")
        #expect(LinkURL.percentDecode("100%") == "100%")
        #expect(LinkURL.percentDecode("%zz%4") == "%zz%4")
        #expect(LinkURL.percentDecode("a+b") == "a+b")
        #expect(LinkURL.percentDecode("%FF") == "%FF")
    }

    @Test("query items split like NSURLComponents")
    func queryItems() {
        let items = LinkURL.queryItems("a=1&&b&c=x=y&", decoded: false)
        #expect(items.map(\.name) == ["a", "b", "c"])
        #expect(items.map(\.value) == ["1", "", "x=y"])
        #expect(LinkURL.queryItems("n%C3%A4me=a%20b", decoded: true).first! == ("näme", "a b"))
        #expect(LinkURL.queryItems(nil, decoded: false).isEmpty)
    }
}

@Suite("App identifiers (spec §1.3)")
struct AppIdentifierTests {
    @Test(
        "well-formed identifiers pass",
        arguments: [
            "ABCDE12345.com.example.app", "ABCDE12345.com.example-app.app", "0123456789.x", "ABCDE12345.com.Example.App",
        ])
    func valid(_ id: String) {
        #expect(AppIdentifier.problem(with: id) == nil)
    }

    @Test(
        "each malformation says what is wrong",
        arguments: [
            ("com.example.app", "team ID prefix must be 10 characters"),
            ("ABC.com.x", "team ID prefix must be 10 characters (found 3)"),
            ("ABCDE123456.com.x", "(found 11)"),
            ("abcde12345.com.x", "must be upper case"),
            ("ABCDE-2345.com.x", "only A–Z and 0–9"),
            ("ABCDE12345.", "bundle ID after the team ID is missing"),
            ("ABCDE12345", "needs a 10-character Team ID prefix"),
            ("ABCDE12345.com.my_app", "found '_'"),
            ("ABCDE12345.com..app", "empty part"),
            ("ABCDE12345.com.app.", "empty part"),
            ("ABCDE12345.com.app*", "found '*'"),
        ])
    func invalid(_ id: String, _ fragment: String) {
        let problem = AppIdentifier.problem(with: id)
        #expect(problem?.contains(fragment) == true, "\(id): \(problem ?? "accepted")")
    }
}
