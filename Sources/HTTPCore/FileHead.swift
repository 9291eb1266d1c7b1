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
    /// HTTP/1.1, back to back: `Content-Type: …\r\nContent-Length: ` (`lead`), the same with
    /// `Content-Encoding: gzip` between them (`leadGzip`), and the `Cache-Control`, `Vary` and
    /// `X-Content-Type-Options` lines (`tail`; a 304's end before the last, `tailNotModified`).
    package let http1: [UInt8]
    package let lead: Range<Int>
    package let leadGzip: Range<Int>
    package let tail: Range<Int>
    package let tailNotModified: Range<Int>
    /// HTTP/2: the values of `content-type`, `cache-control` and `vary`, back to back.
    package let values: [UInt8]

    /// Values must be valid field values (`HTTPField.valueProblem`: the callers check the
    /// configured ones before they get here).
    public init(contentType: String, cacheControl: String, vary: String?) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.vary = vary
        let contentTypeLine = Array("Content-Type: \(contentType)\r\n".utf8)
        var bytes = contentTypeLine + Array("Content-Length: ".utf8)
        lead = 0..<bytes.count
        bytes += contentTypeLine + Array("Content-Encoding: gzip\r\nContent-Length: ".utf8)
        leadGzip = lead.upperBound..<bytes.count
        let tailStart = bytes.count
        bytes += Array("Cache-Control: \(cacheControl)\r\n".utf8)
        if let vary { bytes += Array("Vary: \(vary)\r\n".utf8) }
        tailNotModified = tailStart..<bytes.count
        bytes += Array("X-Content-Type-Options: nosniff\r\n".utf8)
        tail = tailStart..<bytes.count
        http1 = bytes
        values = Array((contentType + cacheControl + (vary ?? "")).utf8)
    }

    /// Where `values` holds each value.
    package var contentTypeRange: Range<Int> { 0..<contentType.utf8.count }
    package var cacheControlRange: Range<Int> { contentTypeRange.upperBound..<(contentTypeRange.upperBound + cacheControl.utf8.count) }
    package var varyRange: Range<Int>? { vary.map { cacheControlRange.upperBound..<(cacheControlRange.upperBound + $0.utf8.count) } }
}

/// What a served file's heads are made of beside the shared parts: its (or its gzip form's)
/// length and ETag and its Last-Modified. The served file is one (a subclass: a site holds no
/// object more for it), and so is its gzip form once made.
open class FileHeadSource: @unchecked Sendable {
    public final let parts: FileHeadParts
    public final let contentLength: Int
    public final let etag: String
    /// Seconds since the epoch.
    public final let lastModified: Int64

    public init(parts: FileHeadParts, contentLength: Int, etag: String, lastModified: Int64) {
        self.parts = parts
        self.contentLength = contentLength
        self.etag = etag
        self.lastModified = lastModified
    }
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

    /// The file (or its gzip form) whose head this is: one counted reference, so that a
    /// response carrying it costs a copy what a response of prepared fields does.
    public var source: FileHeadSource
    public var form: Form

    public var parts: FileHeadParts { source.parts }
    /// The body's length (not sent in a 304).
    public var contentLength: Int { source.contentLength }
    public var etag: String { source.etag }
    /// Seconds since the epoch.
    public var lastModified: Int64 { source.lastModified }

    public init(source: FileHeadSource, form: Form) {
        self.source = source
        self.form = form
    }

    /// A head of its own values (tests).
    public init(parts: FileHeadParts, form: Form, contentLength: Int, etag: String, lastModified: Int64) {
        self.init(source: FileHeadSource(parts: parts, contentLength: contentLength, etag: etag, lastModified: lastModified), form: form)
    }

    /// Appends the HTTP/1.1 lines (`Name: value\r\n` each), composed in one piece on the stack
    /// and copied into `out` once.
    public func writeHTTP1(into out: inout [UInt8]) {
        withETag { etag in
            parts.http1.withUnsafeBufferPointer { prepared in
                let lead = form == .ok ? parts.lead : form == .gzip ? parts.leadGzip : 0..<0
                let tail = form == .notModified ? parts.tailNotModified : parts.tail
                let capacity = lead.count + Self.maximumDigits + 8 + etag.count + 17 + HTTPDate.maximumLength + 2 + tail.count
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
                    let start = buffer.baseAddress!
                    var at = start
                    func copy(_ from: UnsafePointer<UInt8>?, _ count: Int) {
                        guard let from, count > 0 else { return }
                        at.update(from: from, count: count)
                        at += count
                    }
                    let etagLine = Self.etagLine.utf8Start
                    if form != .notModified {
                        copy(prepared.baseAddress.map { $0 + lead.lowerBound }, lead.count)
                        at += Self.writeDecimal(contentLength, to: at)
                        copy(etagLine, 8)
                    } else {
                        copy(etagLine + 2, 6)
                    }
                    copy(etag.baseAddress, etag.count)
                    copy(Self.lastModifiedLine.utf8Start, Self.lastModifiedLine.utf8CodeUnitCount)
                    at += HTTPDate.write(lastModified, to: at)
                    at[0] = 13
                    at[1] = 10
                    at += 2
                    copy(prepared.baseAddress.map { $0 + tail.lowerBound }, tail.count)
                    out.append(contentsOf: UnsafeBufferPointer(start: start, count: at - start))
                }
            }
        }
    }

    /// The ETag's bytes, without a copy when the String holds them contiguously (ours do).
    private func withETag<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = etag.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(etag.utf8).withUnsafeBufferPointer(body)
    }

    /// Room `writeHTTP2Values` needs.
    package var http2ValuesCapacity: Int { Self.maximumDigits + etag.utf8.count + HTTPDate.maximumLength }

    /// Writes the HTTP/2 values made per response at `to` (room for `http2ValuesCapacity`),
    /// back to back: the Content-Length digits (none for a 304), the ETag and the Last-Modified
    /// date; returns where each ends. Not generic, so that the HTTP/2 module calls it
    /// specialized (a generic helper reached across modules ran unspecialized: 500 instructions).
    package func writeHTTP2Values(to text: UnsafeMutablePointer<UInt8>) -> (length: Int, etag: Int, end: Int) {
        let length = form == .notModified ? 0 : Self.writeDecimal(contentLength, to: text)
        let etagEnd = withETag { etag in
            if let tag = etag.baseAddress, etag.count > 0 { (text + length).update(from: tag, count: etag.count) }
            return length + etag.count
        }
        return (length, etagEnd, etagEnd + HTTPDate.write(lastModified, to: text + etagEnd))
    }

    private static let etagLine: StaticString = "\r\nETag: "
    private static let lastModifiedLine: StaticString = "\r\nLast-Modified: "
    /// Digits of the largest length.
    package static let maximumDigits = 20

    /// Writes a non-negative number's decimal digits at `to` (room for `maximumDigits`; a
    /// negative number as 0: a length never is) and returns how many.
    package static func writeDecimal(_ value: Int, to text: UnsafeMutablePointer<UInt8>) -> Int {
        guard value > 0 else {
            text[0] = 48
            return 1
        }
        var digits = 0
        var rest = value
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        rest = value
        for i in stride(from: digits - 1, through: 0, by: -1) {
            text[i] = UInt8(truncatingIfNeeded: 48 + rest % 10)
            rest /= 10
        }
        return digits
    }

    /// Appends a non-negative number's decimal digits (tests).
    package static func writeDecimal(_ value: Int, into out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximumDigits) { buffer in
            let count = writeDecimal(value, to: buffer.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
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
/// whole (errors, redirects, link pages), or a served file's, composed when written. A struct of
/// two optionals rather than an enum: a response is copied several times on its way out, and
/// copying an enum of two payloads took an out-of-line function that switches on the case (about
/// 200 instructions a copy, callgrind).
public struct ResponseHead: Sendable {
    /// Set for prepared fields (then `file` is nil).
    public var prepared: PreparedFields?
    /// Set for a served file's head (then `prepared` is nil).
    public var file: FileHead?

    public static func prepared(_ fields: PreparedFields) -> ResponseHead { ResponseHead(prepared: fields, file: nil) }
    public static func file(_ head: FileHead) -> ResponseHead { ResponseHead(prepared: nil, file: head) }

    /// As a prepared list (tests, diagnostics).
    public var fields: PreparedFields { file?.prepared ?? prepared ?? .none }

    /// Appends the HTTP/1.1 lines (a served file's as `heads`, the worker's, holds them).
    public func writeHTTP1(into out: inout [UInt8], heads: inout FileHeadCache) {
        if let file {
            heads.writeHTTP1(file, into: &out)
        } else if let prepared {
            out.append(contentsOf: prepared.http1)
        }
    }
}
