import HTTPCore

/// A strict, bounded HTTP/1.1 request-head parser (RFC 9112), incremental: it remembers how far it
/// has looked for the end of the head, so a client sending one byte at a time costs linear work.
///
/// Strict where leniency has caused request smuggling or cache poisoning elsewhere: lines end in
/// CRLF only (a bare LF or CR is refused), no white space before a field's colon, no obs-fold,
/// one `Host`, no control characters, no request bodies at all.
public struct HTTP1Parser: Sendable {
    /// Longest request line. Matches nginx's default `large_client_header_buffers` line size; an
    /// AASA request line is under 100 bytes.
    public static let maximumRequestLineLength = 8_192
    /// Largest head (request line and all fields). Twice the line bound, as nginx allows 4 × 8 KB
    /// buffers; real clients send under 2 KB.
    public static let maximumHeadLength = 16_384
    /// Most header fields (h2o's and Apache's limit is 100).
    public static let maximumHeaderCount = 100

    public enum Result: Equatable, Sendable {
        case complete(RequestHead)
        case incomplete
        case failed(RequestError)
    }

    /// Bytes already searched for the end of the head.
    private var scanned = 0
    /// Where the request line ends (its CR), once seen.
    private var requestLineEnd = -1
    /// Whether a request may announce a body: the tenant API's listener (Sources/TenantAPI/
    /// Transport) takes bodies framed by Content-Length and bounds them itself. With it, a
    /// Content-Length (digits only, equal if repeated) is handed over in
    /// `RequestHead.contentLength` and a Transfer-Encoding is marked in
    /// `RequestHead.transferEncoding`, for the caller to refuse; without it, both are refused here
    /// (413), as nothing the file server answers takes a body.
    private let acceptsBodies: Bool

    public init(acceptsBodies: Bool = false) {
        self.acceptsBodies = acceptsBodies
    }

    /// Parses the request at the start of `bytes`. After `.complete(head)` the next request starts
    /// at `head.length`; call `reset()` before parsing it.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        let count = bytes.count
        // RFC 9112 §2.2: ignore empty lines before a request line (old clients send CRLF after a
        // body). They count towards the bounds.
        var start = 0
        while start + 1 < count && bytes[start] == 13 && bytes[start + 1] == 10 { start += 2 }

        // Find the end of the head (CRLF CRLF), refusing a bare LF or CR as soon as it is seen.
        var i = max(scanned, start)
        var end = -1
        while i < count {
            let b = bytes[i]
            if b == 10 {
                guard i > 0, bytes[i - 1] == 13 else { return .failed(.badRequest("line ends in a bare LF")) }
                if requestLineEnd < 0 { requestLineEnd = i - 1 }
                if i >= start + 3 && bytes[i - 2] == 10 && bytes[i - 3] == 13 {
                    end = i + 1
                    break
                }
            } else if i > 0 && bytes[i - 1] == 13 {
                return .failed(.badRequest("CR not followed by LF"))
            }
            i += 1
        }
        let lineLength = (requestLineEnd >= 0 ? requestLineEnd : count) - start
        if lineLength > Self.maximumRequestLineLength { return .failed(.requestLineTooLong) }
        guard end >= 0 else {
            if count > Self.maximumHeadLength { return .failed(.headersTooLarge) }
            // A final CR is looked at again with the byte after it.
            scanned = max(start, count - 1)
            return .incomplete
        }
        if end > Self.maximumHeadLength { return .failed(.headersTooLarge) }
        return Self.parseHead(bytes, start: start, requestLineEnd: requestLineEnd, end: end, acceptsBodies: acceptsBodies)
    }

    /// Calls `body` with each header field of a head this parser completed, in the order sent:
    /// the name's range and the value's (surrounding spaces and tabs removed). The head was
    /// checked by `parse` (CRLF lines, token names, no control bytes in values), so this only
    /// walks it.
    public static func forEachField(
        _ b: UnsafeRawBufferPointer, _ head: RequestHead, _ body: (_ name: Range<Int>, _ value: Range<Int>) -> Void
    ) {
        // The request line ends at the first CR after the target.
        var line = head.target.upperBound
        while b[line] != 13 { line += 1 }
        line += 2
        while line < head.length - 2 {
            var lineEnd = line
            while b[lineEnd] != 13 { lineEnd += 1 }
            var colon = line
            while b[colon] != 58 { colon += 1 }
            var valueStart = colon + 1
            while valueStart < lineEnd && (b[valueStart] == 32 || b[valueStart] == 9) { valueStart += 1 }
            var valueEnd = lineEnd
            while valueEnd > valueStart && (b[valueEnd - 1] == 32 || b[valueEnd - 1] == 9) { valueEnd -= 1 }
            body(line..<colon, valueStart..<valueEnd)
            line = lineEnd + 2
        }
    }

    /// Forgets the progress on the current request, to parse the next one.
    public mutating func reset() {
        scanned = 0
        requestLineEnd = -1
    }

    // MARK: - The head

    private static func parseHead(_ b: UnsafeRawBufferPointer, start: Int, requestLineEnd: Int, end: Int, acceptsBodies: Bool) -> Result {
        var head = RequestHead()
        head.length = end
        // request-line = method SP request-target SP HTTP-version
        var i = start
        while i < requestLineEnd && isTokenChar(b[i]) { i += 1 }
        guard i > start, i < requestLineEnd, b[i] == 32 else { return .failed(.badRequest("malformed method")) }
        head.method = method(b, start..<i)
        i += 1
        let targetStart = i
        while i < requestLineEnd && b[i] > 32 && b[i] < 127 { i += 1 }
        guard i > targetStart, i < requestLineEnd, b[i] == 32 else { return .failed(.badRequest("malformed request-target")) }
        head.target = targetStart..<i
        i += 1
        switch version(b, i..<requestLineEnd) {
        case .some(.some(let v)): head.version = v
        case .some(.none): return .failed(.versionNotSupported)
        case .none: return .failed(.badRequest("malformed HTTP version"))
        }
        if let error = splitTarget(b, &head) { return .failed(error) }

        // header fields
        var line = requestLineEnd + 2
        var count = 0
        var hostCount = 0
        var contentLength: Range<Int>?
        while line < end - 2 {
            var lineEnd = line
            while b[lineEnd] != 13 { lineEnd += 1 }
            count += 1
            if count > maximumHeaderCount { return .failed(.headersTooLarge) }
            if b[line] == 32 || b[line] == 9 { return .failed(.badRequest("obsolete line folding")) }
            var colon = line
            while colon < lineEnd && isTokenChar(b[colon]) { colon += 1 }
            guard colon > line, colon < lineEnd, b[colon] == 58 else {
                return .failed(.badRequest("malformed header field name"))
            }
            var valueStart = colon + 1
            while valueStart < lineEnd && (b[valueStart] == 32 || b[valueStart] == 9) { valueStart += 1 }
            var valueEnd = lineEnd
            while valueEnd > valueStart && (b[valueEnd - 1] == 32 || b[valueEnd - 1] == 9) { valueEnd -= 1 }
            for k in valueStart..<valueEnd where (b[k] < 32 && b[k] != 9) || b[k] == 127 {
                return .failed(.badRequest("control character in a header value"))
            }
            let name = line..<colon
            let value = valueStart..<valueEnd
            switch KnownField(b, name) {
            case .host:
                hostCount += 1
                if hostCount > 1 { return .failed(.badRequest("more than one Host field")) }
                if head.host == nil { head.host = value }
            case .connection:
                scanTokens(b, value) { token in
                    if equalsLowercase(b, token, "close") { head.connection.close = true }
                    if equalsLowercase(b, token, "keep-alive") { head.connection.keepAlive = true }
                }
            case .contentLength:
                guard !value.isEmpty, value.allSatisfy({ b[$0] >= 48 && b[$0] <= 57 }) else {
                    return .failed(.badRequest("malformed Content-Length"))
                }
                if let previous = contentLength, !equalBytes(b, previous, value) {
                    return .failed(.badRequest("conflicting Content-Length fields"))
                }
                contentLength = value
                if acceptsBodies {
                    head.contentLength = value
                } else if value.contains(where: { b[$0] != 48 }) {
                    return .failed(.bodyNotAllowed)
                }
            case .transferEncoding:
                guard acceptsBodies else { return .failed(.bodyNotAllowed) }
                head.transferEncoding = true
            case .ifNoneMatch:
                head.ifNoneMatch = value
            case .ifModifiedSince:
                head.ifModifiedSince = value
            case .userAgent:
                head.userAgent = value
            case .acceptEncoding:
                head.acceptsGzip = HTTPFields.acceptsGzip(UnsafeRawBufferPointer(rebasing: b[value]))
            case .other:
                break
            }
            line = lineEnd + 2
        }
        if head.version == .http11 && hostCount == 0 && head.host == nil {
            return .failed(.badRequest("HTTP/1.1 request without Host"))
        }
        if let host = head.host, !isValidHost(b, host) { return .failed(.badRequest("malformed Host")) }
        return .complete(head)
    }

    /// Splits origin-form and absolute-form targets into path (and host for absolute-form).
    private static func splitTarget(_ b: UnsafeRawBufferPointer, _ head: inout RequestHead) -> RequestError? {
        let t = head.target
        var pathStart = t.lowerBound
        if b[t.lowerBound] == 47 {  // "/": origin-form
        } else if t.count == 1 && b[t.lowerBound] == 42 {  // "*": asterisk-form (OPTIONS)
            head.path = t
            return nil
        } else if let schemeEnd = absoluteFormAuthorityStart(b, t) {
            var authorityEnd = schemeEnd
            while authorityEnd < t.upperBound && b[authorityEnd] != 47 && b[authorityEnd] != 63 { authorityEnd += 1 }
            guard authorityEnd > schemeEnd else { return .badRequest("absolute-form target without host") }
            // RFC 9112 §3.2.2: the target's authority replaces the Host field.
            head.host = schemeEnd..<authorityEnd
            pathStart = authorityEnd
        } else {
            return .badRequest("unsupported request-target form")
        }
        var pathEnd = pathStart
        while pathEnd < t.upperBound && b[pathEnd] != 63 {
            if b[pathEnd] == 35 { return .badRequest("fragment in request-target") }
            pathEnd += 1
        }
        head.path = pathStart..<pathEnd
        return nil
    }

    /// For `http://` or `https://` (any case), the index after `//`.
    private static func absoluteFormAuthorityStart(_ b: UnsafeRawBufferPointer, _ t: Range<Int>) -> Int? {
        for scheme: StaticString in ["http://", "https://"] {
            let n = scheme.utf8CodeUnitCount
            if t.count > n && equalsLowercase(b, t.lowerBound..<(t.lowerBound + n), scheme) { return t.lowerBound + n }
        }
        return nil
    }

    private static func method(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Method {
        Method(UnsafeRawBufferPointer(rebasing: b[r]))
    }

    /// `HTTP/1.1` → .http11, `HTTP/1.0` → .http10, `HTTP/x.y` other → .some(nil) (505),
    /// anything else → nil (400).
    private static func version(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Version?? {
        guard r.count == 8, b[r.lowerBound] == 72, b[r.lowerBound + 1] == 84, b[r.lowerBound + 2] == 84,
            b[r.lowerBound + 3] == 80, b[r.lowerBound + 4] == 47, b[r.lowerBound + 6] == 46
        else { return nil }
        let major = b[r.lowerBound + 5]
        let minor = b[r.lowerBound + 7]
        guard (48...57).contains(major), (48...57).contains(minor) else { return nil }
        if major == 49 && minor == 49 { return .some(.http11) }
        if major == 49 && minor == 48 { return .some(.http10) }
        return .some(nil)
    }

    /// RFC 9110 §5.6.2 tchar.
    @inline(__always)
    public static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case 48...57, 65...90, 97...122: return true
        case 33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126: return true
        default: return false
        }
    }

    /// Host = uri-host [ ":" port ]: a reg-name of letters, digits, `-`, `.`, `_` (and the other
    /// sub-delims), or an IPv6 literal in brackets; port digits only.
    static func isValidHost(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Bool {
        if r.isEmpty { return false }
        var i = r.lowerBound
        if b[i] == 91 {  // [IPv6]
            while i < r.upperBound && b[i] != 93 {
                let c = b[i]
                guard c == 91 || c == 58 || c == 46 || (48...57).contains(c) || (97...102).contains(c) || (65...70).contains(c) else {
                    return false
                }
                i += 1
            }
            guard i < r.upperBound else { return false }
            i += 1
        } else {
            while i < r.upperBound && b[i] != 58 {
                let c = b[i]
                guard (48...57).contains(c) || (65...90).contains(c) || (97...122).contains(c) || c == 45 || c == 46 || c == 95 else {
                    return false
                }
                i += 1
            }
        }
        if i < r.upperBound {
            guard b[i] == 58 else { return false }
            i += 1
            while i < r.upperBound {
                guard (48...57).contains(b[i]) else { return false }
                i += 1
            }
        }
        return true
    }

    private static func scanTokens(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, _ body: (Range<Int>) -> Void) {
        var i = r.lowerBound
        while i < r.upperBound {
            while i < r.upperBound && (b[i] == 44 || b[i] == 32 || b[i] == 9) { i += 1 }
            let s = i
            while i < r.upperBound && b[i] != 44 && b[i] != 32 && b[i] != 9 && b[i] != 59 { i += 1 }
            if i > s { body(s..<i) }
            while i < r.upperBound && b[i] != 44 { i += 1 }
        }
    }

    /// `HTTPFields.equalsLowercase` over a range of the buffer.
    @inline(__always)
    static func equalsLowercase(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, _ literal: StaticString) -> Bool {
        HTTPFields.equalsLowercase(UnsafeRawBufferPointer(rebasing: b[r]), literal)
    }

    private static func equalBytes(_ b: UnsafeRawBufferPointer, _ x: Range<Int>, _ y: Range<Int>) -> Bool {
        x.count == y.count && zip(x, y).allSatisfy { b[$0] == b[$1] }
    }
}

/// The header fields the server reads; all others are skipped.
enum KnownField {
    case host, connection, contentLength, transferEncoding, ifNoneMatch, ifModifiedSince, userAgent, acceptEncoding, other

    init(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) {
        switch r.count {
        case 4 where HTTP1Parser.equalsLowercase(b, r, "host"): self = .host
        case 10 where HTTP1Parser.equalsLowercase(b, r, "connection"): self = .connection
        case 10 where HTTP1Parser.equalsLowercase(b, r, "user-agent"): self = .userAgent
        case 14 where HTTP1Parser.equalsLowercase(b, r, "content-length"): self = .contentLength
        case 17 where HTTP1Parser.equalsLowercase(b, r, "transfer-encoding"): self = .transferEncoding
        case 13 where HTTP1Parser.equalsLowercase(b, r, "if-none-match"): self = .ifNoneMatch
        case 17 where HTTP1Parser.equalsLowercase(b, r, "if-modified-since"): self = .ifModifiedSince
        case 15 where HTTP1Parser.equalsLowercase(b, r, "accept-encoding"): self = .acceptEncoding
        default: self = .other
        }
    }
}
