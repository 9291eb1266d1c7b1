import HTTP1
import HTTPCore

/// The statuses the server sends, with their reason phrases.
public enum Status: Int, Sendable {
    case ok = 200
    case notModified = 304
    case badRequest = 400
    case notFound = 404
    case methodNotAllowed = 405
    case contentTooLarge = 413
    case uriTooLong = 414
    case misdirected = 421
    case fieldsTooLarge = 431
    case versionNotSupported = 505
    case serviceUnavailable = 503

    public var reason: String {
        switch self {
        case .ok: "OK"
        case .notModified: "Not Modified"
        case .badRequest: "Bad Request"
        case .notFound: "Not Found"
        case .methodNotAllowed: "Method Not Allowed"
        case .contentTooLarge: "Content Too Large"
        case .uriTooLong: "URI Too Long"
        case .misdirected: "Misdirected Request"
        case .fieldsTooLarge: "Request Header Fields Too Large"
        case .versionNotSupported: "HTTP Version Not Supported"
        case .serviceUnavailable: "Service Unavailable"
        }
    }
}

/// One response, as references to prepared bytes: building it copies nothing (arrays are shared
/// copy-on-write), and serialising it copies each piece once into the output buffer.
public struct Response {
    public var status: Status
    /// `Name: value\r\n` lines, all but `Date` and `Connection`.
    public var headers: [UInt8]
    public var body: [UInt8]
    /// False for HEAD and 304: the headers describe the body, but it is not sent.
    public var sendsBody: Bool
    /// The connection closes after this response.
    public var close: Bool

    /// Appends the HTTP/1.1 form: status line, `Date`, the prepared lines, `Connection: close`
    /// when closing, the empty line and the body.
    public func serialize(into out: inout [UInt8], dateLine: [UInt8]) {
        out.append(contentsOf: StatusLines.line(status))
        out.append(contentsOf: dateLine)
        out.append(contentsOf: headers)
        if close { out.append(contentsOf: StatusLines.connectionClose) }
        out.append(13)
        out.append(10)
        if sendsBody { out.append(contentsOf: body) }
    }

    /// The response as sent for a request with this method: RFC 9110 §9.3.2, a HEAD response
    /// never has content, whatever its status.
    func answering(_ method: Method) -> Response {
        guard method == .head else { return self }
        var response = self
        response.sendsBody = false
        return response
    }

    /// A plain-text error response, prepared once per status.
    public static func error(_ status: Status, close: Bool, sendsBody: Bool = true) -> Response {
        let prepared = ErrorBodies.prepared(status)
        return Response(status: status, headers: prepared.headers, body: prepared.body, sendsBody: sendsBody, close: close)
    }
}

/// Status lines and fixed header lines, encoded once.
enum StatusLines {
    static let lines: [Int: [UInt8]] = {
        var out: [Int: [UInt8]] = [:]
        for code in [200, 304, 400, 404, 405, 413, 414, 421, 431, 503, 505] {
            let status = Status(rawValue: code)!
            out[code] = Array("HTTP/1.1 \(code) \(status.reason)\r\n".utf8)
        }
        return out
    }()

    static func line(_ status: Status) -> [UInt8] { lines[status.rawValue]! }

    static let connectionClose = Array("Connection: close\r\n".utf8)
}

/// The bodies and header lines of error responses: short text, never the request echoed back.
enum ErrorBodies {
    struct Prepared {
        let headers: [UInt8]
        let body: [UInt8]
    }

    private static let table: [Int: Prepared] = {
        var out: [Int: Prepared] = [:]
        for code in [400, 404, 405, 413, 414, 421, 431, 503, 505] {
            let status = Status(rawValue: code)!
            let body = Array("\(code) \(status.reason)\n".utf8)
            var headers = "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.count)\r\nX-Content-Type-Options: nosniff\r\n"
            if status == .methodNotAllowed { headers += "Allow: GET, HEAD\r\n" }
            if status == .notFound || status == .methodNotAllowed || status == .misdirected { headers += "Cache-Control: no-store\r\n" }
            out[code] = Prepared(headers: Array(headers.utf8), body: body)
        }
        return out
    }()

    static func prepared(_ status: Status) -> Prepared { table[status.rawValue]! }
}

/// `Date: <IMF-fixdate>\r\n`, formatted once per second per loop (hummingbird's DateCache idea).
public struct DateLine {
    private var second: Int64 = -1
    public private(set) var bytes: [UInt8] = []
    /// The date alone, for HTTP/2's `date` field.
    public private(set) var value = ""

    public init() {}

    public mutating func update(now seconds: Int64) {
        guard seconds != second else { return }
        second = seconds
        value = HTTPDate.format(seconds)
        bytes = Array("Date: \(value)\r\n".utf8)
    }
}
