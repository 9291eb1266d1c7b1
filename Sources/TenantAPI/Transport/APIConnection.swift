import Glibc
import HTTP1
import HTTPCore
import Logging
import SafeText
import StrictJSON

/// One connection's requests, read and answered in order on the connection's own thread
/// (RFC 9112): Content-Length framing only, every wait bounded by `APIListenerLimits`.
struct APIConnection {
    let stream: APIStream
    let peer: String
    let limits: APIListenerLimits
    let handler: APIHandler
    let logger: Logger
    let isStopping: @Sendable () -> Bool

    /// Bytes asked of the socket at once: a request head fits, and a 1 MB body takes 16 reads.
    static let readChunk = 64 * 1024

    /// What ends the connection after an answer of the listener's own.
    private struct Refusal: Error {
        var response: APIResponse
    }

    func run(acceptedAt: ContinuousClock.Instant) {
        defer { stream.finish() }
        do {
            try stream.handshake(until: acceptedAt + limits.headerTimeout)
        } catch {
            logger.debug("api: TLS handshake ended", metadata: ["peer": "\(peer)", "end": "\(error)"])
            return
        }
        var buffer: [UInt8] = []
        var first = true
        while !isStopping() {
            do {
                let keepAlive = try serveOne(&buffer, headStart: first ? acceptedAt : nil)
                first = false
                if !keepAlive { return }
            } catch let refusal as Refusal {
                logger.debug("api: request refused", metadata: ["peer": "\(peer)", "status": "\(refusal.response.status)"])
                try? stream.write(Self.serialize(refusal.response, withBody: true, close: true), until: .now + limits.writeTimeout)
                return
            } catch {
                logger.debug("api: connection ended", metadata: ["peer": "\(peer)", "end": "\(error)"])
                return
            }
        }
    }

    /// Reads one request from `buffer` (and the socket), answers it; whether the connection stays
    /// open. `headStart`: when the head's deadline started (the accept, for a first request);
    /// nil for a later request, whose deadline starts with its first byte.
    private func serveOne(_ buffer: inout [UInt8], headStart: ContinuousClock.Instant?) throws -> Bool {
        var parser = HTTP1Parser(acceptsBodies: true)
        var headDeadline = headStart.map { $0 + limits.headerTimeout }
        if headDeadline == nil && !buffer.isEmpty { headDeadline = .now + limits.headerTimeout }
        let idleDeadline = ContinuousClock.now + limits.idleTimeout
        var head: RequestHead
        while true {
            let result = buffer.withUnsafeBytes { parser.parse($0) }
            if case .complete(let h) = result {
                head = h
                break
            }
            if case .failed(let error) = result { throw Refusal(response: Self.refusal(for: error)) }
            if buffer.count > limits.maximumHeaderBytes { throw Refusal(response: Self.headersTooLarge) }
            try receive(into: &buffer, until: headDeadline ?? idleDeadline)
            if headDeadline == nil { headDeadline = .now + limits.headerTimeout }
        }
        if head.length > limits.maximumHeaderBytes { throw Refusal(response: Self.headersTooLarge) }

        let request = try Self.readHead(buffer, head, peer: peer, secure: stream.isSecure)
        let contentLength = try Self.bodyLength(buffer, head, method: request.method, limits: limits)
        let isHTTP11 = head.version == .http11
        // A body not yet sent, announced with `Expect: 100-continue` (RFC 9110 §10.1.1): the
        // client waits for the 100 before sending it, which comes only now that the head is
        // accepted (a refused head was answered above, and the client sends no body).
        if contentLength > 0, isHTTP11, buffer.count - head.length < contentLength,
            let expect = request.header("expect"), expect.lowercased() == "100-continue"
        {
            try stream.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), until: .now + limits.writeTimeout)
        }
        let bodyDeadline = ContinuousClock.now + limits.bodyTimeout
        while buffer.count - head.length < contentLength {
            try receive(into: &buffer, until: bodyDeadline)
        }
        var complete = request
        complete.body = Array(buffer[head.length..<(head.length + contentLength)])
        buffer.removeFirst(head.length + contentLength)

        var response = handler(complete)
        if let bad = Self.badField(response) {
            logger.error(
                "api: the handler's answer has a header field that cannot be sent; answered 500",
                metadata: ["field": "\(TerminalText.escaped(bad))", "target": "\(TerminalText.escaped(complete.target))"])
            response = Self.error(500, "internal", "The server could not form its answer.")
        }
        // HTTP/1.0 closes after each answer (no keep-alive on this listener); so does a stop, and
        // an answer in `closingStatuses`.
        let keepAlive = isHTTP11 && !head.connection.close && !isStopping() && !Self.closingStatuses.contains(response.status)
        try stream.write(
            Self.serialize(response, withBody: complete.method != "HEAD", close: !keepAlive), until: .now + limits.writeTimeout)
        return keepAlive
    }

    /// What the listener makes of the bytes of one request, without a socket: the same parser,
    /// head checks and body bound as `serveOne`, for the request fuzz target
    /// (Sources/TenantAPI/TenantFuzz.swift). `incomplete`: more bytes are needed.
    enum Reading {
        case incomplete
        case refused(APIResponse)
        case request(APIRequest, consumed: Int)
    }

    static func read(_ buffer: [UInt8], limits: APIListenerLimits) -> Reading {
        var parser = HTTP1Parser(acceptsBodies: true)
        let head: RequestHead
        switch buffer.withUnsafeBytes({ parser.parse($0) }) {
        case .complete(let h): head = h
        case .failed(let error): return .refused(refusal(for: error))
        case .incomplete: return buffer.count > limits.maximumHeaderBytes ? .refused(headersTooLarge) : .incomplete
        }
        if head.length > limits.maximumHeaderBytes { return .refused(headersTooLarge) }
        do {
            var request = try readHead(buffer, head, peer: "127.0.0.1", secure: false)
            let length = try bodyLength(buffer, head, method: request.method, limits: limits)
            guard buffer.count - head.length >= length else { return .incomplete }
            request.body = Array(buffer[head.length..<(head.length + length)])
            return .request(request, consumed: head.length + length)
        } catch let refusal as Refusal {
            return .refused(refusal.response)
        } catch {
            return .refused(Self.error(500, "internal", "The server could not read the request."))
        }
    }

    /// Reads what the socket holds (at least one byte) onto the end of `buffer`.
    private func receive(into buffer: inout [UInt8], until deadline: ContinuousClock.Instant) throws(APIStreamEnd) {
        var chunk = [UInt8](repeating: 0, count: Self.readChunk)
        var result: Result<Int, APIStreamEnd> = .success(0)
        chunk.withUnsafeMutableBytes { all in
            do throws(APIStreamEnd) {
                result = .success(try stream.read(into: all, until: deadline))
            } catch {
                result = .failure(error)
            }
        }
        let n = try result.get()
        buffer += chunk[0..<n]
    }

    /// The request as the handler sees it, without its body; refuses what the API never takes.
    private static func readHead(_ buffer: [UInt8], _ head: RequestHead, peer: String, secure: Bool) throws -> APIRequest {
        try buffer.withUnsafeBytes { (b) throws -> APIRequest in
            // The request line starts after any empty lines the parser skipped.
            var start = 0
            while b[start] == 13 { start += 2 }
            let method = String(decoding: b[start..<(head.target.lowerBound - 1)], as: UTF8.self)
            guard b[head.target.lowerBound] == UInt8(ascii: "/") else {
                throw Refusal(response: Self.error(400, "bad-request", "The request target must be a path (origin-form)."))
            }
            let target = String(decoding: b[head.target], as: UTF8.self)
            var fields: [(name: String, value: String)] = []
            var badValue = false
            HTTP1Parser.forEachField(b, head) { name, value in
                // The parser refused control bytes; bytes above 0x7E (obs-text) are refused here,
                // as APIRequest promises the handler visible ASCII, space and tab only.
                if b[value].contains(where: { $0 > 0x7E }) { badValue = true }
                let lower = b[name].map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
                fields.append((String(decoding: lower, as: UTF8.self), String(decoding: b[value], as: UTF8.self)))
            }
            if badValue {
                throw Refusal(response: Self.error(400, "bad-request", "A header value holds a byte outside visible ASCII."))
            }
            if head.transferEncoding {
                throw Refusal(response: Self.error(411, "length-required", "Transfer-Encoding is not taken; send a Content-Length."))
            }
            return APIRequest(method: method, target: target, headers: fields, peer: peer, secure: secure)
        }
    }

    /// The body's length from Content-Length (the parser checked digits only, and equal values
    /// when repeated), bounded before any of the body is read.
    private static func bodyLength(_ buffer: [UInt8], _ head: RequestHead, method: String, limits: APIListenerLimits) throws -> Int {
        guard let range = head.contentLength else {
            if ["PUT", "POST", "PATCH"].contains(method) {
                throw Refusal(response: Self.error(411, "length-required", "A request with a body needs a Content-Length."))
            }
            return 0
        }
        let digits = buffer[range].drop { $0 == 48 }
        // Compared as digits first: no conversion of a long number can overflow.
        let bound = limits.maximumBodyBytes
        guard digits.count <= String(bound).count, let length = Int(String(decoding: digits, as: UTF8.self)) ?? (digits.isEmpty ? 0 : nil),
            length <= bound
        else {
            throw Refusal(response: Self.error(413, "too-large", "The body is larger than \(bound) bytes."))
        }
        return length
    }

    // MARK: - Answers

    static let headersTooLarge = error(431, "headers-too-large", "The request line and header fields are too large.")

    static func refusal(for error: RequestError) -> APIResponse {
        switch error {
        case .badRequest: Self.error(400, "bad-request", "The request is malformed.")
        case .requestLineTooLong, .headersTooLarge: headersTooLarge
        case .bodyNotAllowed: Self.error(413, "too-large", "The body is not taken.")
        case .versionNotSupported: Self.error(505, "version-not-supported", "Only HTTP/1.1 and HTTP/1.0 are spoken.")
        }
    }

    /// An answer with the API's error body (docs/api.md).
    static func error(_ status: Int, _ code: String, _ message: String) -> APIResponse {
        let body = "{\"error\": \(JSONValue.quote(code)), \"message\": \(JSONValue.quote(message))}"
        return APIResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }

    /// The first handler field that cannot go on the wire: a name that is not an RFC 9110 token,
    /// or a value with a byte outside visible ASCII, space and tab (CR or LF would split the head).
    static func badField(_ response: APIResponse) -> String? {
        for (name, value) in response.headers {
            if name.isEmpty || !name.utf8.allSatisfy({ HTTP1Parser.isTokenChar($0) }) { return name }
            if !value.utf8.allSatisfy({ ($0 >= 0x20 && $0 <= 0x7E) || $0 == 9 }) { return name + ": " + value }
        }
        if !(100...999).contains(response.status) { return "status \(response.status)" }
        return nil
    }

    /// The fields the listener writes itself; the handler's own are dropped.
    private static let framing: Set<String> = ["content-length", "transfer-encoding", "connection", "date", "keep-alive"]

    /// The answer on the wire, with the fields the listener owns.
    /// Answers after which the connection is closed (`Connection: close`): a client without a
    /// valid token (401) or over its rate (429) must not keep a connection slot for `idleTimeout`,
    /// or a few of them hold every slot of `maximumConnections` and `maximumConnectionsPerPeer`
    /// while authenticated clients get 503. The listener's own refusals (400, 411, 413, 431) close
    /// already (`Refusal`: the rest of the stream cannot be trusted to frame the next request).
    static let closingStatuses: Set<Int> = [401, 429]

    static func serialize(_ response: APIResponse, withBody: Bool, close: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        var cacheControl = false
        for (name, value) in response.headers {
            let lower = name.lowercased()
            if Self.framing.contains(lower) { continue }
            if lower == "cache-control" { cacheControl = true }
            head += "\(name): \(value)\r\n"
        }
        if !cacheControl { head += "Cache-Control: no-store\r\n" }
        head += "Date: \(HTTPDate.format(Int64(time(nil))))\r\n"
        // RFC 9110 §8.6: no Content-Length on 1xx and 204; 304 has no body.
        let bodyless = response.status < 200 || response.status == 204 || response.status == 304
        if !bodyless { head += "Content-Length: \(response.body.count)\r\n" }
        if close { head += "Connection: close\r\n" }
        head += "\r\n"
        var out = Array(head.utf8)
        if withBody && !bodyless { out += response.body }
        return out
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        case 507: "Insufficient Storage"
        default: "Status"
        }
    }
}
