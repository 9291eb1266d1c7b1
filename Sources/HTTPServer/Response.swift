public import HTTPCore

/// One response, as references to prepared bytes: building it copies nothing (arrays are shared
/// copy-on-write), and serialising it copies each piece once into the output buffer.
public struct Response {
    public var status: Status
    /// The fields, all but `Date` and `Connection`: prepared in both framings, or a served file's
    /// composed from shared parts when written.
    public var head: ResponseHead
    public var body: [UInt8]
    /// False for HEAD and 304: the headers describe the body, but it is not sent.
    public var sendsBody: Bool
    /// The connection closes after this response.
    public var close: Bool
    /// A `Location` value built for this request (a redirect whose target holds the request's
    /// path); every other field is prepared.
    public var location: [UInt8]? = nil
    /// An admin request whose answer another thread gives later (`PendingAnswer`): the
    /// connection waits for it; the rest of this response is never sent.
    var deferred: AdminEndpoint.Deferred? = nil
    /// Content sent after `body` (`AdminEndpoint.Answer.tail`): HTTP/1.1 only, which the admin
    /// listener alone speaks.
    var tail: [UInt8] = []

    public init(
        status: Status, head: ResponseHead, body: [UInt8], sendsBody: Bool, close: Bool, location: [UInt8]? = nil
    ) {
        self.status = status
        self.head = head
        self.body = body
        self.sendsBody = sendsBody
        self.close = close
        self.location = location
    }

    public init(
        status: Status, headers: PreparedFields, body: [UInt8], sendsBody: Bool, close: Bool, location: [UInt8]? = nil
    ) {
        self.init(status: status, head: .prepared(headers), body: body, sendsBody: sendsBody, close: close, location: location)
    }

    /// The fields as a prepared list (tests, diagnostics).
    public var headers: PreparedFields { head.fields }

    /// Appends the HTTP/1.1 form: status line, `Date`, the fields (a served file's as `heads`,
    /// the worker's, holds them), `Connection: close` when closing, the empty line and the body.
    public func serialize(into out: inout [UInt8], dateLine: [UInt8], heads: inout FileHeadCache) {
        out.append(contentsOf: StatusLines.line(status))
        out.append(contentsOf: dateLine)
        head.writeHTTP1(into: &out, heads: &heads)
        if let location {
            out.append(contentsOf: StatusLines.locationName)
            out.append(contentsOf: location)
            out.append(13)
            out.append(10)
        }
        if close { out.append(contentsOf: StatusLines.connectionClose) }
        out.append(13)
        out.append(10)
        if sendsBody {
            out.append(contentsOf: body)
            out.append(contentsOf: tail)
        }
    }

    /// The same with a cache of its own, made per call. For tests; `package`, so that the
    /// server (which passes its worker's) cannot pick it by leaving the cache out.
    package func serialize(into out: inout [UInt8], dateLine: [UInt8]) {
        var heads = FileHeadCache()
        serialize(into: &out, dateLine: dateLine, heads: &heads)
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
    public static func error(_ status: Status, close: Bool) -> Response {
        let prepared = ErrorBodies.prepared(status)
        return Response(status: status, headers: prepared.headers, body: prepared.body, sendsBody: true, close: close)
    }
}

/// Status lines and fixed header lines, encoded once.
enum StatusLines {
    static let lines: [Int: [UInt8]] = {
        var out: [Int: [UInt8]] = [:]
        for status in Status.allCases {
            out[status.rawValue] = Array("HTTP/1.1 \(status.rawValue) \(status.reason)\r\n".utf8)
        }
        return out
    }()

    static func line(_ status: Status) -> [UInt8] { lines[status.rawValue]! }

    static let connectionClose = Array("Connection: close\r\n".utf8)
    static let locationName = Array("Location: ".utf8)
}

/// The bodies and header lines of error responses: short text, never the request echoed back.
enum ErrorBodies {
    struct Prepared {
        let headers: PreparedFields
        let body: [UInt8]
    }

    private static let table: [Int: Prepared] = {
        var out: [Int: Prepared] = [:]
        for status in Status.allCases where status.rawValue >= 400 {
            let body = Array("\(status.rawValue) \(status.reason)\n".utf8)
            var fields = [
                (name: "Content-Type", value: "text/plain; charset=utf-8"), (name: "Content-Length", value: "\(body.count)"),
                (name: "X-Content-Type-Options", value: "nosniff"),
            ]
            if status == .methodNotAllowed { fields.append((name: "Allow", value: "GET, HEAD")) }
            if status == .notFound || status == .methodNotAllowed || status == .misdirected || status == .internalServerError {
                fields.append((name: "Cache-Control", value: "no-store"))
            }
            out[status.rawValue] = Prepared(headers: PreparedFields(fields), body: body)
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
    public private(set) var value: [UInt8] = []

    public init() {}

    public mutating func update(now seconds: Int64) {
        guard seconds != second else { return }
        second = seconds
        let date = HTTPDate.format(seconds)
        value = Array(date.utf8)
        bytes = Array("Date: \(date)\r\n".utf8)
    }
}
