/// The fields of a served file's responses that do not depend on the file: `Content-Type`,
/// `Cache-Control`, `Vary` and `X-Content-Type-Options`, prepared once per distinct serving
/// options and shared by every file served with them (at 100,000 sites, a handful of objects).
/// A response's head is composed from them when it is written (`FileHead`), with the content's
/// `Content-Length` and `ETag` and the file's `Last-Modified`: a site keeps no head of its own
/// (docs/architecture.md, "Prepared responses").
public final class FileHeadParts: Sendable {
    public let contentType: String
    public let cacheControl: String
    /// The `Vary` value, nil for none.
    public let vary: String?
    /// HTTP/1.1: `Content-Type: …\r\nContent-Length: `, and the same with
    /// `Content-Encoding: gzip` between them.
    package let lead: [UInt8]
    package let leadGzip: [UInt8]
    /// HTTP/1.1: `Cache-Control`, `Vary` and `X-Content-Type-Options` lines; a 304 ends before
    /// the last (`tailNotModified` bytes).
    package let tail: [UInt8]
    package let tailNotModified: Int
    /// HTTP/2: the values of `content-type`, `cache-control` and `vary`, back to back.
    package let values: [UInt8]

    /// Values must be valid field values (`HTTPField.valueProblem`: the callers check the
    /// configured ones before they get here).
    public init(contentType: String, cacheControl: String, vary: String?) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.vary = vary
        let contentTypeLine = Array("Content-Type: \(contentType)\r\n".utf8)
        lead = contentTypeLine + Array("Content-Length: ".utf8)
        leadGzip = contentTypeLine + Array("Content-Encoding: gzip\r\nContent-Length: ".utf8)
        var tail = Array("Cache-Control: \(cacheControl)\r\n".utf8)
        if let vary { tail += Array("Vary: \(vary)\r\n".utf8) }
        tailNotModified = tail.count
        tail += Array("X-Content-Type-Options: nosniff\r\n".utf8)
        self.tail = tail
        values = Array((contentType + cacheControl + (vary ?? "")).utf8)
    }

    /// Where `values` holds each value.
    package var contentTypeRange: Range<Int> { 0..<contentType.utf8.count }
    package var cacheControlRange: Range<Int> { contentTypeRange.upperBound..<(contentTypeRange.upperBound + cacheControl.utf8.count) }
    package var varyRange: Range<Int>? { vary.map { cacheControlRange.upperBound..<(cacheControlRange.upperBound + $0.utf8.count) } }
}

/// The head of one response of a served file, as references and numbers: written into the output
/// when answering (`writeHTTP1`, and `HTTP2Session.respond`), never kept per site.
///
/// Fields, in this order (the order the lists prepared per file had):
/// 200: Content-Type, [Content-Encoding: gzip], Content-Length, ETag, Last-Modified,
/// Cache-Control, [Vary], X-Content-Type-Options;
/// 304 (RFC 9110 §15.4.5: the validators and caching fields, no body fields): ETag,
/// Last-Modified, Cache-Control, [Vary]. None is connection-specific (RFC 9113 §8.2.2).
public struct FileHead: Sendable {
    public enum Form: UInt8, Sendable {
        case ok
        /// A 200 of the gzip form.
        case gzip
        case notModified
    }

    public var parts: FileHeadParts
    public var form: Form
    /// The body's length (not sent in a 304).
    public var contentLength: Int
    public var etag: String
    /// Seconds since the epoch.
    public var lastModified: Int64

    public init(parts: FileHeadParts, form: Form, contentLength: Int, etag: String, lastModified: Int64) {
        self.parts = parts
        self.form = form
        self.contentLength = contentLength
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Appends the HTTP/1.1 lines (`Name: value\r\n` each).
    public func writeHTTP1(into out: inout [UInt8]) {
        if form != .notModified {
            out.append(contentsOf: form == .gzip ? parts.leadGzip : parts.lead)
            Self.writeDecimal(contentLength, into: &out)
            out.append(contentsOf: Self.etagLine)
        } else {
            out.append(contentsOf: Self.etagLine[2...])
        }
        out.append(contentsOf: etag.utf8)
        out.append(contentsOf: Self.lastModifiedLine)
        HTTPDate.write(lastModified, into: &out)
        out.append(13)
        out.append(10)
        if form == .notModified {
            out.append(contentsOf: parts.tail[..<parts.tailNotModified])
        } else {
            out.append(contentsOf: parts.tail)
        }
    }

    private static let etagLine = Array("\r\nETag: ".utf8)
    private static let lastModifiedLine = Array("\r\nLast-Modified: ".utf8)

    /// Appends a non-negative number's decimal digits (a negative one as 0: a length never is).
    package static func writeDecimal(_ value: Int, into out: inout [UInt8]) {
        guard value > 0 else {
            out.append(48)
            return
        }
        var digits = 0
        var rest = value
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        let end = out.count + digits
        out.append(contentsOf: repeatElement(48, count: digits))
        rest = value
        var i = end - 1
        while rest > 0 {
            out[i] = UInt8(truncatingIfNeeded: 48 + rest % 10)
            rest /= 10
            i -= 1
        }
    }

    /// The fields as (name, value) pairs, in order.
    public var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if form != .notModified {
            fields.append((name: "Content-Type", value: parts.contentType))
            if form == .gzip { fields.append((name: "Content-Encoding", value: "gzip")) }
            fields.append((name: "Content-Length", value: "\(contentLength)"))
        }
        fields.append((name: "ETag", value: etag))
        fields.append((name: "Last-Modified", value: HTTPDate.format(lastModified)))
        fields.append((name: "Cache-Control", value: parts.cacheControl))
        if let vary = parts.vary { fields.append((name: "Vary", value: vary)) }
        if form != .notModified { fields.append((name: "X-Content-Type-Options", value: "nosniff")) }
        return fields
    }

    /// The same fields as a prepared list (tests, diagnostics; never on the serving path).
    public var prepared: PreparedFields { PreparedFields(fields) }
}

/// The fields of a response but `Date`, `Connection` and a `Location` built per request: prepared
/// whole (errors, redirects, link pages), or a served file's, composed when written.
public enum ResponseHead: Sendable {
    case prepared(PreparedFields)
    case file(FileHead)

    /// As a prepared list (tests, diagnostics).
    public var fields: PreparedFields {
        switch self {
        case .prepared(let fields): fields
        case .file(let head): head.prepared
        }
    }

    /// Appends the HTTP/1.1 lines.
    public func writeHTTP1(into out: inout [UInt8]) {
        switch self {
        case .prepared(let fields): out.append(contentsOf: fields.http1)
        case .file(let head): head.writeHTTP1(into: &out)
        }
    }
}
