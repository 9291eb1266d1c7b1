import HTTPCore
import Served
import TLS

/// The serving rules (README.md, docs/link-domain.md), shared by HTTP/1.1 and HTTP/2: one routing
/// path, two framings. Pure: it reads the snapshot and the request and returns a `Response`.
enum Responder {
    /// What the connection's TLS handshake settled, for the 421 rule.
    enum TLSIdentity: Sendable, Equatable {
        /// Plain HTTP, or TLS without SNI: the Host header alone decides.
        case none
        /// TLS with SNI: the name the client asked for and the names of the certificate the
        /// connection presented.
        case serverName(String, certificate: CertificateNames)
    }

    static let aasaPath = Array("/.well-known/apple-app-site-association".utf8)
    static let rootAASAPath = Array("/apple-app-site-association".utf8)
    static let assetLinksPath = Array("/.well-known/assetlinks.json".utf8)

    /// A response with where the request falls in the request counters.
    struct Routed {
        var response: Response
        var site: Traffic.SiteClass
        var path: Traffic.PathClass
        /// For a site's fallback answer (a redirect or its page): the platform it was chosen for,
        /// and the site's counts, which the exchange adds to once the answer is final.
        var fallback: ClientPlatform? = nil
        var fallbackCounts: FallbackCounts? = nil
        /// For a route's answer: its index, and the site's route counts.
        var route: Int? = nil
        var routeCounts: RouteCounts? = nil
    }

    static func pathClass(_ path: UnsafeRawBufferPointer) -> Traffic.PathClass {
        if path.equals(aasaPath) { return .wellKnownAASA }
        if path.equals(rootAASAPath) { return .rootAASA }
        if path.equals(assetLinksPath) { return .assetLinks }
        return .other
    }

    /// Answers one request. `host` is already normalised (see `HTTPFields.normalizeHost`); nil when absent.
    /// `pathAndQuery` and `userAgent` matter only for a site's fallback.
    static func respond(
        method: Method, host: String?, path: UnsafeRawBufferPointer, pathAndQuery: UnsafeRawBufferPointer? = nil,
        userAgent: UnsafeRawBufferPointer? = nil, ifNoneMatch: UnsafeRawBufferPointer?, ifModifiedSince: UnsafeRawBufferPointer?,
        acceptsGzip: Bool, snapshot: Snapshot, tls: TLSIdentity
    ) -> Routed {
        let pathClass = pathClass(path)
        guard let host, let site = snapshot.site(forHost: host) else {
            return Routed(response: .error(.notFound, close: false), site: .unknown, path: pathClass)
        }
        func routed(_ response: Response) -> Routed { Routed(response: response, site: .configured, path: pathClass) }
        // 421 (RFC 9110 §15.5.20) means "this connection's certificate does not cover the host":
        // HTTP/2 clients reuse a connection for every host its certificate covers (RFC 9113
        // §9.1.1), and a client that gets 421 retries on a new connection. The SNI name itself is
        // always served (the client asked for it on this connection, and validated what it got);
        // another host only if the certificate presented covers it (RFC 6125 §6.4.3). Which
        // certificate the host's site uses *now* does not matter: a pair rotated, or a site
        // recreated, after the handshake is not a misdirected request. Without SNI, Host decides.
        if case .serverName(let name, let certificate) = tls, host != name, !certificate.covers(host) {
            return routed(.error(.misdirected, close: false))
        }
        let file: PreparedFile?
        switch pathClass {
        case .wellKnownAASA, .rootAASA: file = site.aasa
        case .assetLinks: file = site.assetLinks
        case .other, .acmeChallenge, .fallback:
            let (response, answer) = fallback(
                method: method, host: host, site: site, path: path, pathAndQuery: pathAndQuery ?? path, userAgent: userAgent,
                ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, acceptsGzip: acceptsGzip)
            guard let answer else { return routed(response) }
            // A route's answer counts under its route; the fallback's under the platform.
            if let route = answer.route {
                return Routed(
                    response: response, site: .configured, path: .fallback, fallback: answer.platform, route: route,
                    routeCounts: site.routeCounts)
            }
            return Routed(
                response: response, site: .configured, path: .fallback, fallback: answer.platform, fallbackCounts: site.fallbackCounts)
        }
        guard let file else { return routed(.error(.notFound, close: false)) }
        guard method != .other else { return routed(.error(.methodNotAllowed, close: false)) }
        return routed(serve(file, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, acceptsGzip: acceptsGzip))
    }

    /// A prepared file's 200 or 304.
    private static func serve(
        _ file: PreparedFile, ifNoneMatch: UnsafeRawBufferPointer?, ifModifiedSince: UnsafeRawBufferPointer?, acceptsGzip: Bool
    ) -> Response {
        // Until the background queue has made the gzip form (queued by this first ask, see
        // PreparedContent), a client that accepts gzip gets the file as it is.
        let gzip = acceptsGzip ? file.gzip : nil
        let etag = gzip?.etag ?? file.etag
        if HTTPFields.notModified(etag: etag, lastModified: file.lastModified, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince) {
            let head = file.head(.notModified, gzip: gzip)
            return Response(status: .notModified, head: .file(head), body: [], sendsBody: false, close: false)
        }
        return Response(status: .ok, head: .file(file.head(.ok, gzip: gzip)), body: gzip?.body ?? file.body, sendsBody: true, close: false)
    }

    /// Every other path of a site with `routes`, `fallback` or `page` (docs/link-domain.md): the
    /// first matching route's answer, else the fallback's, for the platform (a preview for a
    /// crawler, the interstitial for an in-app browser, where site.yaml asks); 404 without, and
    /// for the paths they never cover (`PreparedFallback.covers`). Counting is the exchange's (a
    /// request with content is refused after this).
    private static func fallback(
        method: Method, host: String, site: ServedSite, path: UnsafeRawBufferPointer, pathAndQuery: UnsafeRawBufferPointer,
        userAgent: UnsafeRawBufferPointer?, ifNoneMatch: UnsafeRawBufferPointer?, ifModifiedSince: UnsafeRawBufferPointer?,
        acceptsGzip: Bool
    ) -> (Response, LinkAnswer?) {
        guard let answer = site.linkAnswer(host: host, target: pathAndQuery, userAgent: userAgent) else {
            return (.error(.notFound, close: false), nil)
        }
        guard method != .other else { return (.error(.methodNotAllowed, close: false), nil) }
        switch answer.kind {
        case .tooLong:
            return (.error(.uriTooLong, close: false), nil)
        case .page(let page):
            return (serve(page, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, acceptsGzip: acceptsGzip), answer)
        case .preview(let headers, let body), .interstitial(let headers, let body):
            return (Response(status: .ok, headers: headers, body: body, sendsBody: true, close: false), answer)
        case .redirect(let redirect, let location):
            return (
                Response(status: redirect.status, headers: redirect.headers, body: [], sendsBody: false, close: false, location: location),
                answer
            )
        }
    }
}
