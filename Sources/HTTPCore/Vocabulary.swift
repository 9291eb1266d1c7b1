/// The words HTTP/1.1 and HTTP/2 share, so that neither protocol module depends on the other and
/// the server speaks of one request and one response whatever the framing.

/// A request's method, as far as serving cares: GET and HEAD are served, anything else is 405 on
/// a served path and 404 elsewhere.
public enum Method: Equatable, Sendable {
    case get
    case head
    case other

    /// The method named by `bytes` exactly (methods are case-sensitive, RFC 9110 §9.1). Not
    /// generic: it runs once per request of either protocol.
    public init(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count == 3 && bytes[0] == 71 && bytes[1] == 69 && bytes[2] == 84 {  // GET
            self = .get
        } else if bytes.count == 4 && bytes[0] == 72 && bytes[1] == 69 && bytes[2] == 65 && bytes[3] == 68 {  // HEAD
            self = .head
        } else {
            self = .other
        }
    }
}

/// The statuses the server sends, with their reason phrases. Closed: a status the server does
/// not know cannot be sent by accident.
public enum Status: Int, Sendable, CaseIterable {
    case ok = 200
    /// The redirects (RFC 9110 §15.4): 301 and 302 let a client turn a POST into a GET, 307 and
    /// 308 keep the method and content.
    case movedPermanently = 301
    case found = 302
    /// A route's redirect may be 303: "see this other resource", always fetched with GET.
    case seeOther = 303
    case notModified = 304
    case temporaryRedirect = 307
    case permanentRedirect = 308
    case badRequest = 400
    case notFound = 404
    case methodNotAllowed = 405
    case contentTooLarge = 413
    case uriTooLong = 414
    case misdirected = 421
    case fieldsTooLarge = 431
    case internalServerError = 500
    case serviceUnavailable = 503
    case versionNotSupported = 505

    public var reason: String {
        switch self {
        case .ok: "OK"
        case .movedPermanently: "Moved Permanently"
        case .found: "Found"
        case .seeOther: "See Other"
        case .notModified: "Not Modified"
        case .temporaryRedirect: "Temporary Redirect"
        case .permanentRedirect: "Permanent Redirect"
        case .badRequest: "Bad Request"
        case .notFound: "Not Found"
        case .methodNotAllowed: "Method Not Allowed"
        case .contentTooLarge: "Content Too Large"
        case .uriTooLong: "URI Too Long"
        case .misdirected: "Misdirected Request"
        case .fieldsTooLarge: "Request Header Fields Too Large"
        case .internalServerError: "Internal Server Error"
        case .serviceUnavailable: "Service Unavailable"
        case .versionNotSupported: "HTTP Version Not Supported"
        }
    }

    /// The three digits, as HTTP/2's `:status` carries them.
    public var code: [UInt8] { Self.codes[rawValue - 200] }

    /// Indexed by status minus 200 (every status is in 200...599).
    private static let codes: [[UInt8]] = (200...599).map { Array(String($0).utf8) }
}

/// Header field names the server reads or writes, in lower case (the HTTP/2 form, RFC 9113
/// §8.2.1; HTTP/1.1 compares them case-insensitively, RFC 9110 §5.1).
public enum FieldName {
    public static let host = "host"
    public static let authority = ":authority"
    public static let method = ":method"
    public static let path = ":path"
    public static let status = ":status"
    public static let connection = "connection"
    public static let contentLength = "content-length"
    public static let transferEncoding = "transfer-encoding"
    public static let ifNoneMatch = "if-none-match"
    public static let ifModifiedSince = "if-modified-since"
    public static let userAgent = "user-agent"
    public static let acceptEncoding = "accept-encoding"
    public static let date = "date"
}
