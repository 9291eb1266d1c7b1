import HTTPCore
import SiteStore
import Synchronization
import Testing

@testable import HTTPServer

/// The one request path, without sockets: the same rules whichever protocol framed the request.
@Suite("Exchange: route, count, HEAD rule")
struct ExchangeTests {
    static let aasaPath = "/.well-known/apple-app-site-association"
    static let body = Array(#"{"applinks":{"details":[]}}"#.utf8)

    static func exchange(admin: AdminEndpoint? = nil, http01: HTTP01Resolver? = nil) throws -> Exchange {
        let file = try PreparedFile(body: body, modified: 784_111_777, options: ServingOptions())
        let site = ServedSite(
            directory: "a.test", hosts: [try HostName(parsing: "a.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0)
        let snapshot = Snapshot(generation: 1, sites: [site], defaultCertificate: nil)
        return Exchange(snapshot: snapshot, counters: WorkerCounters(), fetchLog: nil, accessLog: nil, admin: admin, http01: http01)
    }

    static let sitePeer = Peer(fd: -1, client: "-", isAdmin: false, counted: .https)

    /// Answers `method path` for `host` as framed by `version`.
    static func answer(
        _ exchange: inout Exchange, _ method: Method, _ path: String, host: String? = "a.test", version: Traffic.HTTPVersion,
        hasBody: Bool = false, peer: Peer = sitePeer
    ) -> Response {
        let pathBytes = Array(path.utf8)
        let hostBytes = host.map { Array($0.utf8) }
        return pathBytes.withUnsafeBytes { path in
            func run(_ authority: UnsafeRawBufferPointer?) -> Response {
                let request = RequestView(
                    version: version, method: method, authority: authority, path: path, target: path, ifNoneMatch: nil,
                    ifModifiedSince: nil,
                    userAgent: nil, acceptsGzip: false, hasBody: hasBody)
                return exchange.answer(request, peer: peer, tls: .none)
            }
            guard let hostBytes else { return run(nil) }
            return hostBytes.withUnsafeBytes { run($0) }
        }
    }

    static func requests(_ exchange: Exchange, _ version: Traffic.HTTPVersion, _ status: Traffic.StatusClass) -> Int {
        var total = ServerStatistics()
        exchange.counters.add(to: &total)
        return total.requests.filter { $0.key.version == version && $0.key.status == status }.values.reduce(0, +)
    }

    @Test(
        "HEAD gets the GET's head and no body, for a file and for an error, over both framings",
        arguments: [Traffic.HTTPVersion.http1, .http2])
    func headRule(version: Traffic.HTTPVersion) throws {
        var exchange = try Self.exchange()
        let get = Self.answer(&exchange, .get, Self.aasaPath, version: version)
        let head = Self.answer(&exchange, .head, Self.aasaPath, version: version)
        #expect(get.status == .ok && get.sendsBody && get.body == Self.body)
        #expect(head.status == .ok && !head.sendsBody && head.headers == get.headers)
        let missing = Self.answer(&exchange, .head, "/nothing", version: version)
        #expect(missing.status == .notFound && !missing.sendsBody)
        #expect(Self.answer(&exchange, .other, Self.aasaPath, version: version).status == .methodNotAllowed)
        #expect(Self.answer(&exchange, .get, Self.aasaPath, host: "b.test", version: version).status == .notFound)
        #expect(Self.answer(&exchange, .get, Self.aasaPath, host: nil, version: version).status == .notFound)
    }

    @Test("a request with content is refused with 413 whatever the path, and counted as such")
    func bodyRefused() throws {
        var exchange = try Self.exchange()
        let response = Self.answer(&exchange, .get, Self.aasaPath, version: .http2, hasBody: true)
        #expect(response.status == .contentTooLarge)
        #expect(Self.requests(exchange, .http2, .init(.contentTooLarge)) == 1)
        #expect(Self.requests(exchange, .http2, .init(.ok)) == 0)
    }

    @Test("requests are counted under the framing they came in; refusals under HTTP/1.1 and an unknown site")
    func counting() throws {
        var exchange = try Self.exchange()
        _ = Self.answer(&exchange, .get, Self.aasaPath, version: .http1)
        _ = Self.answer(&exchange, .get, Self.aasaPath, version: .http2)
        _ = Self.answer(&exchange, .get, Self.aasaPath, version: .http2)
        #expect(Self.requests(exchange, .http1, .init(.ok)) == 1)
        #expect(Self.requests(exchange, .http2, .init(.ok)) == 2)
        let refused = exchange.refuse(.badRequest, peer: Self.sitePeer)
        #expect(refused.status == .badRequest && refused.close)
        #expect(Self.requests(exchange, .http1, .init(.badRequest)) == 1)
    }

    @Test("the admin listener is answered by the admin endpoint, not counted, and HEAD has no body")
    func admin() throws {
        let endpoint = AdminEndpoint { path in
            path == "/healthz" ? AdminEndpoint.Answer(status: .ok, body: Array("ok\n".utf8)) : nil
        }
        var exchange = try Self.exchange(admin: endpoint)
        let peer = Peer(fd: -1, client: "-", isAdmin: true, counted: nil)
        let get = Self.answer(&exchange, .get, "/healthz", host: nil, version: .http1, peer: peer)
        #expect(get.status == .ok && get.body == Array("ok\n".utf8) && get.sendsBody)
        let head = Self.answer(&exchange, .head, "/healthz", host: nil, version: .http1, peer: peer)
        #expect(head.status == .ok && !head.sendsBody)
        let aasa = Self.answer(&exchange, .get, Self.aasaPath, host: "localhost", version: .http1, peer: peer)
        #expect(aasa.status == .notFound, "no site on the admin port")
        #expect(Self.answer(&exchange, .get, Self.aasaPath, version: .http1, peer: peer).status == .misdirected, "a site's name")
        #expect(Self.requests(exchange, .http1, .init(.ok)) == 0)
    }

    @Test("a method other than GET and HEAD gets 405 with Allow on every admin path, before the page's handler runs")
    func adminMethodFirst() throws {
        let calls = CallCounter()
        let endpoint = AdminEndpoint { target in
            calls.add()
            return target == "/missing" ? nil : AdminEndpoint.Answer(status: .ok, body: Array("page\n".utf8))
        }
        var exchange = try Self.exchange(admin: endpoint)
        let peer = Peer(fd: -1, client: "-", isAdmin: true, counted: nil)
        // Each page the daemon's admin listener has (Sources/Daemon/Admin.swift), an unknown one,
        // and methods that change things, an unknown one and a lower-case `get` (methods are
        // case-sensitive, RFC 9110 §9.1).
        let paths = ["/", "/?q=a&after=b", "/?site=a.test", "/healthz", "/readyz", "/metrics", "/sites", "/missing"]
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "get", "BREW"] {
            for path in paths {
                let response = Array(method.utf8).withUnsafeBytes { bytes in
                    Self.answer(&exchange, Method(bytes), path, host: "localhost", version: .http1, peer: peer)
                }
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(String(decoding: response.headers.http1, as: UTF8.self).contains("Allow: GET, HEAD\r\n"), "\(method) \(path)")
            }
        }
        #expect(calls.value == 0, "the handler ran for a method it never answers")
        // GET and HEAD still reach it, once each.
        #expect(Self.answer(&exchange, .get, "/sites", host: "localhost", version: .http1, peer: peer).status == .ok)
        #expect(Self.answer(&exchange, .head, "/missing", host: "localhost", version: .http1, peer: peer).status == .notFound)
        #expect(calls.value == 2)
    }
}

/// Counts calls from any thread.
final class CallCounter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
