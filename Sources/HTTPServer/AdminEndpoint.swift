import Glibc
public import HTTPCore
import Synchronization

/// The admin listener's answers: plain HTTP on its own worker thread, so
/// a large answer (the state of 100,000 sites) never holds up serving. The command supplies the
/// content; this type frames it. A page that takes long to make is answered later
/// (`Reply.later`, AdminPending.swift), so that the thread goes on answering probes meanwhile.
public struct AdminEndpoint: Sendable {
    /// One admin answer: a status, a media type and a body. The status is one of the statuses
    /// the server can send, so an answer cannot carry one the status line would have to guess.
    public struct Answer: Sendable {
        public var status: Status
        public var contentType: String
        public var body: [UInt8]
        /// Sent after `body`, as part of the same content: what a page read now adds to one
        /// rendered earlier (`/sites`' order budget), without copying the page to append it.
        public var tail: [UInt8]
        /// Fields sent besides the four every answer has (an HTML page's Content-Security-Policy).
        public var fields: [(name: String, value: String)]
        /// The connection ends after this answer: a refusal of a costly page, so that a client
        /// that pipelines many asks for it gets one refusal, not one each.
        public var close: Bool

        public init(
            status: Status, contentType: String = "text/plain; charset=utf-8", body: [UInt8], tail: [UInt8] = [],
            fields: [(name: String, value: String)] = [], close: Bool = false
        ) {
            self.status = status
            self.contentType = contentType
            self.body = body
            self.tail = tail
            self.fields = fields
            self.close = close
        }

        /// Bytes of content: `body` and `tail`.
        public var size: Int { body.count + tail.count }
    }

    /// Answers a GET or HEAD for a target: the path, and `?` and the query when one was sent (the
    /// status page reads it; the other pages look at the path only); nil for an unknown path
    /// (404). Never called for another method.
    public typealias Handler = @Sendable (String) -> Answer?
    /// The same, for a handler that may answer later (`PendingAnswer`).
    public typealias ReplyHandler = @Sendable (String) -> Reply?

    private let handler: ReplyHandler
    /// The configured names `Host` may carry besides loopback names and IP literals.
    private let hosts: AdminHosts
    /// The admin worker's unsent bytes, against which a large answer is admitted.
    let output: AdminOutput

    public init(hosts: AdminHosts = AdminHosts(), _ handler: @escaping Handler) {
        self.init(hosts: hosts, output: AdminOutput()) { target in handler(target).map(Reply.now) }
    }

    public init(hosts: AdminHosts = AdminHosts(), output: AdminOutput = AdminOutput(), replies: @escaping ReplyHandler) {
        self.hosts = hosts
        self.handler = replies
        self.output = output
    }

    /// `authority` is the request's `Host` (or an absolute-form target's authority) as sent;
    /// nil when there was none.
    func respond(method: Method, authority: UnsafeRawBufferPointer?, target: String) -> Response {
        // Before the path: a page reached through a name that is not the admin listener's learns
        // nothing, not even which paths exist.
        guard hosts.admits(authority) else { return .error(.misdirected, close: false) }
        // Before the handler: every admin page is read-only (GET, and HEAD answered as GET without
        // the body, RFC 9110 §9.3.2), so any other method is 405 with `Allow: GET, HEAD`
        // (§15.5.6) for every path, and a POST to `/` or `/sites` costs no page built or rendered.
        guard method != .other else { return .error(.methodNotAllowed, close: false) }
        switch handler(target) {
        case nil:
            return .error(.notFound, close: false)
        case .now(let answer):
            // The HEAD rule is applied where every response's is: Exchange.answer.
            return frame(answer, for: method)
        case .later(let pending):
            var response = Response.error(.serviceUnavailable, close: false)
            response.deferred = Deferred(pending: pending, method: method)
            return response
        }
    }

    /// The answer to a request of `method` as a response with the four fields every admin answer
    /// has; 503 for a large one while others wait unsent (`AdminOutput`), decided from its size
    /// before any of it is copied (the body is shared with the page kept for the next ask), and
    /// ending the connection.
    func frame(_ answer: Answer, for method: Method) -> Response {
        // The body of an answer another connection holds unsent (one render's page, waited for
        // by several, or kept for the next ask) is counted once: its other answers are admitted,
        // as they are sent from that storage, never copied (`ConnectionMachine.sharing`). A HEAD
        // sends none of it: nothing to hold, whatever its size.
        guard method == .head || output.holds(answer.body) || output.admits(answer.size) else {
            return Self.frame(Self.busy)
        }
        return Self.frame(answer)
    }

    private static func frame(_ answer: Answer) -> Response {
        let headers = PreparedFields(
            [
                (name: "Content-Type", value: answer.contentType), (name: "Content-Length", value: "\(answer.size)"),
                (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
            ] + answer.fields)
        var response = Response(status: answer.status, headers: headers, body: answer.body, sendsBody: true, close: answer.close)
        response.tail = answer.tail
        return response
    }

    /// A large answer refused while the admin worker holds others unsent; the requests pipelined
    /// after it are not answered (each might be another large one).
    static let busy = Answer(
        status: .serviceUnavailable, body: Array("busy: other answers are waiting to be read; try again\n".utf8),
        fields: [(name: "Retry-After", value: "1")], close: true)
}

/// Which `Host` values the admin listener answers (RFC 9110 §7.2): loopback names (`localhost`
/// and any name under `.localhost`, RFC 6761 §6.3), IP literals (IPv4 dotted-quad, IPv6 in
/// brackets), each with an optional port, and the names configured in `admin-hosts`; any other
/// gets 421 Misdirected Request (RFC 9110 §15.5.20).
///
/// Why: a web page can point a name it controls at 127.0.0.1 (DNS rebinding) and then read the
/// admin pages as same-origin, `/sites` and `/metrics` included; the browser sends that name as
/// `Host`, which the check refuses. A browser always sends `Host`, so a request without one (HTTP/1.0
/// allows it; `curl -0 -H 'Host:'`) is answered. Probes send an IP literal (the kubelet's is the
/// pod's address and port) or `localhost`; a scraper that uses a DNS name needs it in
/// `admin-hosts`. The configured names change live (`set`).
public final class AdminHosts: Sendable {
    private let names: Mutex<Set<String>>

    /// Longest `Host` looked at: a 253-byte name (RFC 1035 §2.3.4), a trailing dot, a colon and
    /// five port digits; anything longer is no name the admin listener answers.
    public static let maximumLength = 253 + 1 + 1 + 5

    /// `names`: lower-case host names without a port or trailing dot, as `admin-hosts` holds them.
    public init(_ names: [String] = []) {
        self.names = Mutex(Set(names))
    }

    public func set(_ names: [String]) {
        self.names.withLock { $0 = Set(names) }
    }

    /// Whether a request with this `Host` is answered; nil (no `Host`) is.
    public func admits(_ host: UnsafeRawBufferPointer?) -> Bool {
        guard let host else { return true }
        guard host.count >= 1, host.count <= Self.maximumLength else { return false }
        var end = host.count
        if host[0] == UInt8(ascii: "[") {
            // An IPv6 literal (RFC 3986 §3.2.2): the brackets hold an address, nothing else (a
            // zone identifier is no address a browser sends).
            guard let close = host.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
            guard Self.isPort(host, from: close + 1),
                Self.parses(UnsafeRawBufferPointer(rebasing: host[1..<close]), family: AF_INET6)
            else { return false }
            return true
        }
        if let colon = host.firstIndex(of: UInt8(ascii: ":")) {
            guard Self.isPort(host, from: colon) else { return false }
            end = colon
        }
        let name = UnsafeRawBufferPointer(rebasing: host[0..<end])
        guard !name.isEmpty else { return false }
        if name.allSatisfy({ $0 == UInt8(ascii: ".") || ($0 >= 0x30 && $0 <= 0x39) }) {
            // Digits and dots only: an IPv4 literal in dotted-quad form, or nothing (a browser
            // writes every other IPv4 form as dotted-quad, and no DNS name ends in a number).
            return Self.parses(name, family: AF_INET)
        }
        // A name: letters, digits, '-' and '_' in labels, one trailing dot at most.
        var previous: UInt8 = UInt8(ascii: ".")
        for (k, c) in name.enumerated() {
            let letter = (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A)
            let digit = c >= 0x30 && c <= 0x39
            if c == UInt8(ascii: ".") {
                // An empty label: at the start, or two dots; one at the end is the root's.
                guard previous != UInt8(ascii: "."), k > 0 else { return false }
            } else if !(letter || digit || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")) {
                return false
            }
            previous = c
        }
        let normal = HTTPFields.normalizeHost(name)
        if normal == "localhost" || normal.hasSuffix(".localhost") { return true }
        return names.withLock { $0.contains(normal) }
    }

    /// Nothing from `start`, or `:` and a port of one to five digits up to 65535.
    private static func isPort(_ host: UnsafeRawBufferPointer, from start: Int) -> Bool {
        if start == host.count { return true }
        guard host[start] == UInt8(ascii: ":") else { return false }
        let digits = host[(start + 1)...]
        guard digits.count >= 1, digits.count <= 5, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) } <= 65_535
    }

    /// Whether `inet_pton` takes the bytes as an address of `family`: glibc's parser, which
    /// refuses leading zeros and short forms for IPv4, and anything but RFC 4291 §2.2 text for IPv6.
    private static func parses(_ text: UnsafeRawBufferPointer, family: Int32) -> Bool {
        // INET6_ADDRSTRLEN (46) with the NUL: no address is longer.
        // No NUL either: it would end the C string early and let the bytes after it through.
        guard text.count < 46, !text.contains(0) else { return false }
        var cString = [CChar](repeating: 0, count: text.count + 1)
        for (k, c) in text.enumerated() { cString[k] = CChar(bitPattern: c) }
        var address = in6_addr()
        return inet_pton(family, cString, &address) == 1
    }
}
