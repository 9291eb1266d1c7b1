/// One request to the tenant API as its listener read it (docs/api.md): the listener owns the
/// wire (HTTP/1.1 framing, TLS, bounds, timeouts); the handler owns the meaning. Both sides of
/// this type are checked: the listener passes only what RFC 9112 allows, the handler trusts
/// nothing about the values beyond that.
public struct APIRequest: Sendable {
    /// The method as sent: an RFC 9110 token (`PUT`, `GET`, ...), case kept.
    public var method: String
    /// The origin-form target as sent: path and optional query, percent-escapes not decoded.
    public var target: String
    /// Header fields in the order sent: names in lower case, values without surrounding
    /// whitespace, each value visible ASCII, space and tab only (anything else was refused).
    public var headers: [(name: String, value: String)]
    /// The whole body (Content-Length framing; the listener bounds it).
    public var body: [UInt8]
    /// The peer's address as text (`127.0.0.1`, `::1`), for logs and per-client limits.
    public var peer: String
    /// Whether the request came over TLS.
    public var secure: Bool

    public init(
        method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        peer: String = "127.0.0.1", secure: Bool = false
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.peer = peer
        self.secure = secure
    }

    /// The first value of a field, by lower-case name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// The handler's answer. The listener adds the framing fields (`Content-Length`, `Date`,
/// `Connection`) and refuses a header value with a byte outside visible ASCII, space and tab.
public struct APIResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What the listener calls for each request, on the connection's own thread: it may block (on
/// fsync, or waiting until a written site is served), which is why the API has a listener of its
/// own instead of the serving event loop.
public typealias APIHandler = @Sendable (APIRequest) -> APIResponse
