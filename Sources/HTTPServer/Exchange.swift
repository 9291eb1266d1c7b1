import HTTPCore
import Reactor
import Served

/// The connection a request came on, as far as answering it and keeping its books care.
struct Peer {
    /// The socket, read only to tell Apple's network from a spoofed User-Agent.
    let fd: Int32
    /// The client's address for the access log ("-" when there is no access log).
    let client: String
    /// Accepted on the admin listener: answered by the admin endpoint, never with sites.
    let isAdmin: Bool
    /// The listener it is counted under; nil for the admin listener, which is not counted.
    let counted: Traffic.ListenerClass?

    /// Accepted on a plain HTTP listener (not HTTPS, not admin): the only place HTTP-01 is answered.
    var isPlainHTTP: Bool { counted == .http }
}

/// One request as either framing delivered it: views into bytes that are valid for the call.
struct RequestView {
    var version: Traffic.HTTPVersion
    var method: Method
    /// `Host` (HTTP/1.1, or the authority of an absolute-form target) or `:authority` (HTTP/2),
    /// as sent.
    var authority: UnsafeRawBufferPointer?
    /// The path, without the query.
    var path: UnsafeRawBufferPointer
    /// The target as sent, query included, for the access log. `path` lies within it.
    var target: UnsafeRawBufferPointer
    var ifNoneMatch: UnsafeRawBufferPointer?
    var ifModifiedSince: UnsafeRawBufferPointer?
    var userAgent: UnsafeRawBufferPointer?
    var acceptsGzip: Bool
    /// The client sent content (HTTP/2 DATA); nothing served takes any.
    var hasBody = false

    /// The path and the query as sent (an absolute-form target's scheme and authority left out):
    /// what a redirect carries over to its target.
    var pathAndQuery: UnsafeRawBufferPointer {
        guard let start = path.baseAddress, let base = target.baseAddress, start >= base, start <= base + target.count else {
            return path
        }
        return UnsafeRawBufferPointer(start: start, count: base + target.count - start)
    }
}

/// What a connection needs from the side that answers its requests. The worker's `Exchange` in
/// the server; a recording stub in the state machine's unit tests.
protocol RequestAnswering {
    /// This second's `Date` line (HTTP/1.1) and value (HTTP/2).
    var dateLine: DateLine { get }
    /// The final response to a request: routed, counted, noted and logged.
    mutating func answer(_ request: RequestView, peer: Peer, tls: Responder.TLSIdentity) -> Response
    /// The response to an HTTP/1.1 request the parser refused, counted and logged as such.
    mutating func refuse(_ status: Status, peer: Peer) -> Response
}

/// The one path every request takes, whichever protocol framed it (docs/architecture.md):
/// route (the sites; on plain HTTP, ACME's HTTP-01 path and, when on, the redirect to HTTPS) →
/// count → Apple fetch → HEAD rule → access log. HTTP/1.1 and HTTP/2 differ only in how
/// they fill a `RequestView` and frame the `Response`.
struct Exchange: RequestAnswering {
    /// The sites as of this loop iteration (see `Worker.refreshSnapshot`).
    var snapshot: Snapshot
    let counters: WorkerCounters
    /// Where fetches by Apple's CDN are noted.
    let fetchLog: FetchLog?
    /// Access log lines waiting for the end of the loop iteration; nil without an access log.
    var accessLog: AccessLogBuffer?
    /// Answers the admin listener's requests (only the admin worker has one).
    let admin: AdminEndpoint?
    /// Answers ACME's HTTP-01 requests on the plain listener; nil: that path is like any other.
    let http01: HTTP01Resolver?
    /// Answers the ownership check's path (`OwnershipCheckPath`); nil: that path is like any other.
    let ownershipAnswer: OwnershipAnswerResolver?
    /// Sends the plain listener's other requests to HTTPS; nil: plain HTTP serves the sites.
    let httpsRedirect: HTTPSRedirect.Prepared?
    var dateLine = DateLine()
    /// Seconds since the epoch as of this loop iteration, for log lines and fetch notes.
    private var wallSeconds: Int64 = 0

    init(
        snapshot: Snapshot, counters: WorkerCounters, fetchLog: FetchLog?, accessLog: AccessLogBuffer?, admin: AdminEndpoint?,
        http01: HTTP01Resolver? = nil, httpsRedirect: HTTPSRedirect.Prepared? = nil, ownershipAnswer: OwnershipAnswerResolver? = nil
    ) {
        self.ownershipAnswer = ownershipAnswer
        self.snapshot = snapshot
        self.counters = counters
        self.fetchLog = fetchLog
        self.accessLog = accessLog
        self.admin = admin
        self.http01 = http01
        self.httpsRedirect = httpsRedirect
    }

    /// A new loop iteration: the clock for `Date`, log lines and fetch notes.
    mutating func tick(wallSeconds seconds: Int64) {
        wallSeconds = seconds
        dateLine.update(now: seconds)
    }

    /// Writes the access log lines of this loop iteration.
    mutating func flushLog() {
        if accessLog?.isEmpty == false { accessLog!.flush() }
    }

    mutating func answer(_ request: RequestView, peer: Peer, tls: Responder.TLSIdentity) -> Response {
        if peer.isAdmin, let admin {
            // Admin answers are neither counted nor logged: they are not traffic.
            return admin.respond(
                method: request.method, authority: request.authority, target: String(decoding: request.pathAndQuery, as: UTF8.self)
            )
            .answering(request.method)
        }
        let host = request.authority.map(HTTPFields.normalizeHost)
        var routed: Responder.Routed
        if let ownershipAnswer, OwnershipCheckPath.isCheckPath(request.path) {
            // The tenant API's ownership check, on plain HTTP before any redirect (the checker
            // fetches http://, Sources/TenantAPI/VerificationChecker.swift) and on HTTPS.
            routed = OwnershipCheckPath.respond(
                method: request.method, host: host, path: request.path, snapshot: snapshot, resolver: ownershipAnswer)
        } else if peer.isPlainHTTP, let http01, HTTP01.isChallengePath(request.path) {
            // ACME's HTTP-01 (RFC 8555 §8.3): plain HTTP only, as the CA asks on port 80; on
            // HTTPS the path is like any other.
            routed = HTTP01.respond(method: request.method, host: host, path: request.path, snapshot: snapshot, resolver: http01)
        } else if peer.isPlainHTTP, let httpsRedirect {
            // Plain HTTP in production (docs/link-domain.md): everything else goes to HTTPS.
            routed = httpsRedirect.respond(
                method: request.method, host: host, path: request.path, pathAndQuery: request.pathAndQuery, snapshot: snapshot)
        } else {
            routed = Responder.respond(
                method: request.method, host: host, path: request.path, pathAndQuery: request.pathAndQuery, userAgent: request.userAgent,
                ifNoneMatch: request.ifNoneMatch, ifModifiedSince: request.ifModifiedSince, acceptsGzip: request.acceptsGzip,
                snapshot: snapshot, tls: tls)
        }
        // Only GET and HEAD are served, and neither has content: a body is refused, whatever the
        // path.
        if request.hasBody { routed.response = .error(.contentTooLarge, close: false) }
        let response = routed.response.answering(request.method)
        // A fallback answer counts once it is the answer sent (not a refused body's 413).
        let fallback = request.hasBody ? nil : routed.fallback
        if let fallback { routed.fallbackCounts?.add(fallback) }
        if fallback != nil, let route = routed.route { routed.routeCounts?.add(route) }
        if peer.counted != nil {
            counters.request(
                request.version, routed.site, fallback == nil && routed.path == .fallback ? .other : routed.path, response.status)
            if let fallback { counters.fallback(fallback, response.status) }
        }
        if let agent = request.userAgent { noteAppleFetch(peer, agent, routed, host: host) }
        log(peer, request.method, host: host, target: request.target, version: request.version, response, userAgent: request.userAgent)
        return response
    }

    mutating func refuse(_ status: Status, peer: Peer) -> Response {
        let response = Response.error(status, close: true)
        if peer.counted != nil { counters.request(.http1, .unknown, .other, response.status) }
        log(peer, .other, host: nil, target: nil, version: .http1, response, userAgent: nil)
        return response
    }

    /// Adds a line to the access log, when there is one.
    private mutating func log(
        _ peer: Peer, _ method: Method, host: String?, target: UnsafeRawBufferPointer?, version: Traffic.HTTPVersion, _ response: Response,
        userAgent: UnsafeRawBufferPointer?
    ) {
        guard accessLog != nil, !peer.isAdmin else { return }
        let entry = AccessEntry(
            client: peer.client, host: host, method: method, target: target ?? UnsafeRawBufferPointer(start: nil, count: 0),
            http2: version == .http2, status: response.status.rawValue, bytes: response.sendsBody ? response.body.count : 0,
            userAgent: userAgent)
        accessLog!.append(entry, now: wallSeconds)
        if accessLog!.isFull { accessLog!.flush() }
    }

    /// Notes a fetch of an AASA path by Apple's CDN (rare: the check is a prefix compare). The
    /// client's address is read only then (one getpeername), to tell Apple's network from a
    /// spoofed User-Agent.
    private func noteAppleFetch(_ peer: Peer, _ agent: UnsafeRawBufferPointer, _ routed: Responder.Routed, host: String?) {
        guard let fetchLog, FetchLog.isApple(agent), routed.path == .wellKnownAASA || routed.path == .rootAASA else { return }
        let site = routed.site == .configured ? host.flatMap { snapshot.site(forHost: $0)?.directory } : nil
        let fromAppleNetwork = (try? Socket.peerAddress(peer.fd)).map(FetchLog.isAppleNetwork) ?? false
        fetchLog.record(site: site, host: host, status: routed.response.status, at: wallSeconds, fromAppleNetwork: fromAppleNetwork)
    }
}
