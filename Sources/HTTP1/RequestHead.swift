public import HTTPCore

public enum Version: Equatable, Sendable {
    case http10
    case http11
}

/// What the request's `Connection` header asks for (RFC 9110 §7.6.1).
public struct ConnectionTokens: Equatable, Sendable {
    public var close = false
    public var keepAlive = false

    public init(close: Bool = false, keepAlive: Bool = false) {
        self.close = close
        self.keepAlive = keepAlive
    }
}

/// A parsed request head. Byte fields are ranges into the buffer that was parsed, so parsing
/// copies nothing; the caller reads them before it moves on in the buffer.
public struct RequestHead: Equatable, Sendable {
    public var method: Method = .other
    /// The request-target as sent (origin-form path and query, or absolute-form).
    public var target: Range<Int> = 0..<0
    /// The path part of the target (before `?`); for absolute-form, after the authority.
    public var path: Range<Int> = 0..<0
    /// The host from the `Host` header, or from an absolute-form target (RFC 9112 §3.2.2).
    public var host: Range<Int>?
    public var version: Version = .http11
    public var connection = ConnectionTokens()
    public var ifNoneMatch: Range<Int>?
    public var ifModifiedSince: Range<Int>?
    public var userAgent: Range<Int>?
    /// True when `Accept-Encoding` lists gzip with a non-zero weight.
    public var acceptsGzip = false
    /// The Content-Length value's digits, when a parser that accepts bodies saw one (unbounded:
    /// the caller converts and bounds it).
    public var contentLength: Range<Int>?
    /// Whether a parser that accepts bodies saw a Transfer-Encoding field (the caller refuses it).
    public var transferEncoding = false
    /// Bytes of the head, request line to the empty line included: where the next request starts.
    public var length = 0

    public init() {}

    /// Whether the connection stays open after the response (RFC 9112 §9.3).
    public var keepAlive: Bool {
        switch version {
        case .http11: !connection.close
        case .http10: connection.keepAlive && !connection.close
        }
    }
}

/// Why a request is refused before it is routed: each reason carries its status, and the
/// connection is always closed after the error response (the stream position is no longer known).
public enum RequestError: Error, Equatable, Sendable {
    /// 400: malformed syntax; the reason names what (for debug logs, never sent raw).
    case badRequest(String)
    /// 414: the request line is longer than `HTTP1Parser.maximumRequestLineLength`.
    case requestLineTooLong
    /// 431: the head is larger than `HTTP1Parser.maximumHeadLength`, or has too many fields.
    case headersTooLarge
    /// 413: a request body was announced; nothing served here takes one.
    case bodyNotAllowed
    /// 505: an HTTP version other than 1.0 and 1.1.
    case versionNotSupported

    public var status: Int {
        switch self {
        case .badRequest: 400
        case .requestLineTooLong: 414
        case .headersTooLarge: 431
        case .bodyNotAllowed: 413
        case .versionNotSupported: 505
        }
    }
}
