import Foundation
import HTTPCore
import SiteStore
import Testing

@testable import HTTPServer

/// Plain HTTP's redirect to HTTPS through the one request path, without sockets: which host may
/// appear in `Location`, what the path becomes, which status, and what stays as it was.
@Suite("HTTPS redirect: the host, the target, the status")
struct HTTPSRedirectTests {
    static let plainPeer = Peer(fd: -1, client: "-", isAdmin: false, counted: .http)
    static let httpsPeer = Peer(fd: -1, client: "-", isAdmin: false, counted: .https)
    static let aasaPath = "/.well-known/apple-app-site-association"
    static let body = Array(#"{"applinks":{"details":[]}}"#.utf8)

    /// `a.test` and the wildcard `*.w.test`, redirecting to `port` (nil: no redirect).
    static func exchange(port: UInt16? = 8443, http01: HTTP01Resolver? = nil) throws -> Exchange {
        let file = try PreparedFile(body: body, modified: 784_111_777, options: ServingOptions())
        let sites = [
            ServedSite(
                directory: "a.test", hosts: [try HostName(parsing: "a.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0),
            ServedSite(
                directory: "*.w.test", hosts: [try HostName(parsing: "*.w.test")], aasa: file, assetLinks: nil, certificate: nil,
                loadedAt: 0),
        ]
        return Exchange(
            snapshot: Snapshot(generation: 1, sites: sites, defaultCertificate: nil), counters: WorkerCounters(), fetchLog: nil,
            accessLog: nil, admin: nil, http01: http01, httpsRedirect: port.map(HTTPSRedirect.Prepared.init(port:)))
    }

    /// Answers `method target` with `host` as its authority. The path is the target up to `?`,
    /// as the parsers give it; `path` overrides it (an absolute-form target's path).
    static func answer(
        _ exchange: inout Exchange, _ target: [UInt8], host: [UInt8]? = Array("a.test".utf8), method: Method = .get,
        path: [UInt8]? = nil, peer: Peer = plainPeer
    ) -> Response {
        target.withUnsafeBytes { target in
            let pathRange: Range<Int>
            if let path, let start = target.firstRange(of: path)?.lowerBound {
                pathRange = start..<(start + path.count)
            } else {
                pathRange = 0..<(target.firstIndex(of: UInt8(ascii: "?")) ?? target.count)
            }
            func run(_ authority: UnsafeRawBufferPointer?) -> Response {
                let request = RequestView(
                    version: .http1, method: method, authority: authority, path: UnsafeRawBufferPointer(rebasing: target[pathRange]),
                    target: target, ifNoneMatch: nil, ifModifiedSince: nil, userAgent: nil, acceptsGzip: false)
                return exchange.answer(request, peer: peer, tls: .none)
            }
            guard let host else { return run(nil) }
            return host.withUnsafeBytes { run($0) }
        }
    }

    static func answer(
        _ exchange: inout Exchange, _ target: String, host: String? = "a.test", method: Method = .get, peer: Peer = plainPeer
    ) -> Response {
        answer(&exchange, Array(target.utf8), host: host.map { Array($0.utf8) }, method: method, peer: peer)
    }

    static func location(_ response: Response) -> String? { response.location.map { String(decoding: $0, as: UTF8.self) } }

    /// Hosts that must never reach a `Location`: each either names no site, or reaches the
    /// wildcard site `*.w.test` only by suffix while being no host name (the parsers refuse most
    /// of these bytes; this is the guard behind them).
    static let hostileHosts = [
        "evil.example/x.w.test", "evil.example#.w.test", "evil.example?.w.test", "evil.example\\.w.test", "evil.example@x.w.test",
        "evil.example x.w.test", "evil.example\r\nx: y.w.test", "..x.w.test", "x..w.test", "-x.w.test", "x_y.w.test", "*.w.test",
        "\u{e9}.w.test", "b.test", "evil.example", "127.0.0.1", "[::1]", "[::1]:80", "", ".", "w.test",
        String(repeating: "a", count: 64) + ".w.test",
    ]

    @Test("a Host that names no site, or that is no host name, gets 404 and never a Location", arguments: hostileHosts)
    func hostileHost(_ host: String) throws {
        var exchange = try Self.exchange()
        for path in ["/", Self.aasaPath, "/buy/42"] {
            let response = Self.answer(&exchange, path, host: host)
            #expect(response.status == .notFound, "\(host) \(path): \(response.status)")
            #expect(response.location == nil, "\(host) \(path): \(Self.location(response) ?? "")")
        }
    }

    @Test("no Host at all (HTTP/1.0) gets 404")
    func noHost() throws {
        var exchange = try Self.exchange()
        let response = Self.answer(&exchange, "/buy/42", host: nil)
        #expect(response.status == .notFound && response.location == nil)
    }

    /// Paths whose bytes try to end the URL's path, start a new authority or split the head:
    /// the expected target after `https://a.test:8443`.
    static let hostilePaths: [(path: [UInt8], target: String)] = [
        (Array("//evil.example/x".utf8), "//evil.example/x"),
        (Array("/\\evil.example".utf8), "/%5Cevil.example"),
        (Array("/\\\\evil.example/x".utf8), "/%5C%5Cevil.example/x"),
        (Array("/%0d%0aSet-Cookie:x".utf8), "/%0d%0aSet-Cookie:x"),
        (Array("/a\r\nSet-Cookie: x".utf8), "/a%0D%0ASet-Cookie:%20x"),
        (Array("/x?q#frag".utf8), "/x?q%23frag"),
        (Array("/@evil.example".utf8), "/@evil.example"),
        (Array("evil.example/x".utf8), "/evil.example/x"),
        (Array("/caf".utf8) + [0xC3, 0xA9, 0x80, 0xFF], "/caf%C3%A9%80%FF"),
        (Array("/a\u{0}b\u{7F}".utf8), "/a%00b%7F"),
        (Array("/\"<>^`{|}[]".utf8), "/%22%3C%3E%5E%60%7B%7C%7D%5B%5D"),
        (Array("/%2F%2e%2E/..%2f".utf8), "/%2F%2e%2E/..%2f"),
    ]

    @Test("hostile paths are carried over encoded, never decoded: the host stays the request's, the head cannot be split")
    func hostilePaths() throws {
        var exchange = try Self.exchange()
        for (path, target) in Self.hostilePaths {
            let response = Self.answer(&exchange, path)
            let location = try #require(Self.location(response), "\(path)")
            #expect(location == "https://a.test:8443" + target, "\(path)")
            #expect(response.location!.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(location)")
            #expect(URLComponents(string: location)?.host == "a.test", "\(location)")
        }
        // Asterisk-form (`OPTIONS *`) names no resource: nothing to redirect to.
        #expect(Self.answer(&exchange, Array("*".utf8)).status == .notFound)
    }

    @Test("any path and query is kept as sent; the host is normalised; the port is the configured one, 443 left out")
    func target() throws {
        var exchange = try Self.exchange()
        for (host, target, expected) in [
            ("a.test", "/buy/42?src=mail&x=%20y", "https://a.test:8443/buy/42?src=mail&x=%20y"),
            ("A.Test.:8080", "/", "https://a.test:8443/"),
            ("a.test:80", "/?", "https://a.test:8443/?"),
            ("X.W.Test", "/p", "https://x.w.test:8443/p"),
            ("a.b.w.test", Self.aasaPath, "https://a.b.w.test:8443" + Self.aasaPath),
        ] {
            #expect(Self.location(Self.answer(&exchange, target, host: host)) == expected, "\(host) \(target)")
        }
        var standard = try Self.exchange(port: 443)
        #expect(Self.location(Self.answer(&standard, "/x?y", host: "a.test:8080")) == "https://a.test/x?y")
        var other = try Self.exchange(port: 80)
        #expect(Self.location(Self.answer(&other, "/x")) == "https://a.test:80/x")
    }

    @Test("an absolute-form target: its authority is the host, its scheme and authority are not repeated in the path")
    func absoluteForm() throws {
        var exchange = try Self.exchange()
        let target = Array("http://a.test/x?y=1".utf8)
        let response = Self.answer(&exchange, target, host: Array("a.test".utf8), path: Array("/x".utf8))
        #expect(Self.location(response) == "https://a.test:8443/x?y=1")
    }

    @Test("GET and HEAD get 301, any other method 308; no body, Content-Length 0, a bounded Cache-Control, the connection closes")
    func statusAndFields() throws {
        var exchange = try Self.exchange()
        let get = Self.answer(&exchange, "/x")
        #expect(get.status == .movedPermanently && get.close && get.body.isEmpty)
        #expect(get.headers.value(of: "content-length") == "0")
        #expect(get.headers.value(of: "cache-control") == "max-age=3600")
        #expect(get.headers.value(of: "content-type") == nil)
        let head = Self.answer(&exchange, "/x", method: .head)
        #expect(head.status == .movedPermanently && !head.sendsBody && head.location == get.location)
        let other = Self.answer(&exchange, "/x", method: .other)
        #expect(other.status == .permanentRedirect && other.location == get.location)
        #expect(StatusLines.line(.movedPermanently) == Array("HTTP/1.1 301 Moved Permanently\r\n".utf8))
        #expect(StatusLines.line(.permanentRedirect) == Array("HTTP/1.1 308 Permanent Redirect\r\n".utf8))
        // The HTTP/1.1 head: one Location line, the prepared fields, Connection: close.
        var out: [UInt8] = []
        get.serialize(into: &out, dateLine: Array("Date: x\r\n".utf8))
        #expect(
            String(decoding: out, as: UTF8.self)
                == "HTTP/1.1 301 Moved Permanently\r\nDate: x\r\nContent-Length: 0\r\nCache-Control: max-age=3600\r\n"
                + "Location: https://a.test:8443/x\r\nConnection: close\r\n\r\n")
    }

    @Test("the AASA paths are redirected too, and counted under their path, configured, 3xx")
    func aasaPathsAndCounting() throws {
        var exchange = try Self.exchange()
        for path in [Self.aasaPath, "/apple-app-site-association", "/.well-known/assetlinks.json"] {
            #expect(Self.answer(&exchange, path).status == .movedPermanently, "\(path)")
        }
        _ = Self.answer(&exchange, "/nothing", host: "b.test")
        var total = ServerStatistics()
        exchange.counters.add(to: &total)
        #expect(total.requests[.init(version: .http1, site: .configured, path: .wellKnownAASA, status: .redirection)] == 1)
        #expect(total.requests[.init(version: .http1, site: .configured, path: .rootAASA, status: .redirection)] == 1)
        #expect(total.requests[.init(version: .http1, site: .configured, path: .assetLinks, status: .redirection)] == 1)
        #expect(total.requests[.init(version: .http1, site: .unknown, path: .other, status: .clientError)] == 1)
    }

    @Test("HTTPS is never redirected; without the setting plain HTTP serves the sites as before")
    func onlyPlainAndOnlyWhenOn() throws {
        var exchange = try Self.exchange()
        let https = Self.answer(&exchange, Self.aasaPath, peer: Self.httpsPeer)
        #expect(https.status == .ok && https.location == nil && https.body == Self.body)
        var off = try Self.exchange(port: nil)
        let plain = Self.answer(&off, Self.aasaPath)
        #expect(plain.status == .ok && plain.location == nil && plain.body == Self.body)
        #expect(Self.answer(&off, "/buy/42").status == .notFound)
    }

    @Test(
        "ACME's HTTP-01 path is answered before the redirect; a bad token under it is 404, not a redirect; without a resolver it is redirected"
    )
    func http01First() throws {
        let token = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
        let answer = Array("\(token).9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI".utf8)
        var exchange = try Self.exchange(http01: { host, asked in host == "a.test" && asked == token ? answer : nil })
        let challenge = Self.answer(&exchange, "/.well-known/acme-challenge/\(token)")
        #expect(challenge.status == .ok && challenge.body == answer && challenge.location == nil)
        for bad in ["unknown", "..%2f", ""] {
            let response = Self.answer(&exchange, "/.well-known/acme-challenge/\(bad)")
            #expect(response.status == .notFound && response.location == nil, "\(bad)")
        }
        #expect(Self.answer(&exchange, "/x").status == .movedPermanently)
        var withoutACME = try Self.exchange()
        #expect(
            Self.location(Self.answer(&withoutACME, "/.well-known/acme-challenge/\(token)"))
                == "https://a.test:8443/.well-known/acme-challenge/\(token)")
    }
}
