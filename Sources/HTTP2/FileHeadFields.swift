import CAASANghttp2
import HTTPCore

/// A served file's head as an HTTP/2 field list (`HTTP2Session.respond`): the same fields in the
/// same order as its HTTP/1.1 lines (`FileHead`), names in lower case. Names and fixed values are
/// static text, taken uncopied; the shared parts' values are taken uncopied when the response's
/// entry keeps them alive (it has a body) and copied otherwise; the values written per response
/// (`writeHTTP2Values`) are always copied, during the submit.
extension FileHead {
    /// Where `writeHTTP2Values` ended each value: Content-Length (empty for a 304), ETag,
    /// Last-Modified.
    struct ValueEnds {
        var length: Int
        var etag: Int
        var lastModified: Int
    }

    /// Appends the Content-Length digits (not for a 304), the ETag and the Last-Modified date to
    /// an empty `out`.
    func writeHTTP2Values(into out: inout [UInt8]) -> ValueEnds {
        if form != .notModified { Self.writeDecimal(contentLength, into: &out) }
        let length = out.count
        out.append(contentsOf: etag.utf8)
        let etagEnd = out.count
        HTTPDate.write(lastModified, into: &out)
        return ValueEnds(length: length, etag: etagEnd, lastModified: out.count)
    }

    /// Appends the fields to `nva`: `values` is `parts.values`, `written` what
    /// `writeHTTP2Values` wrote (from its start), both alive until the submit returns.
    func appendHTTP2(
        values: UnsafeBufferPointer<UInt8>, written: UnsafeBufferPointer<UInt8>, ends: ValueEnds, hasBody: Bool,
        to nva: inout [nghttp2_nv]
    ) {
        let kept = hasBody ? CAASANghttp2_NV_FLAG_NO_COPY : CAASANghttp2_NV_FLAG_NO_COPY_NAME
        let copied = CAASANghttp2_NV_FLAG_NO_COPY_NAME
        func field(_ name: StaticString, _ base: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ flags: UInt8) -> nghttp2_nv {
            nghttp2_nv(
                name: UnsafeMutablePointer(mutating: name.utf8Start),
                value: UnsafeMutablePointer(mutating: base.baseAddress.map { $0 + range.lowerBound } ?? name.utf8Start),
                namelen: name.utf8CodeUnitCount, valuelen: range.count, flags: flags)
        }
        func fixed(_ name: StaticString, _ value: StaticString) -> nghttp2_nv {
            nghttp2_nv(
                name: UnsafeMutablePointer(mutating: name.utf8Start), value: UnsafeMutablePointer(mutating: value.utf8Start),
                namelen: name.utf8CodeUnitCount, valuelen: value.utf8CodeUnitCount, flags: CAASANghttp2_NV_FLAG_NO_COPY)
        }
        if form != .notModified {
            nva.append(field("content-type", values, parts.contentTypeRange, kept))
            if form == .gzip { nva.append(fixed("content-encoding", "gzip")) }
            nva.append(field("content-length", written, 0..<ends.length, copied))
        }
        nva.append(field("etag", written, ends.length..<ends.etag, copied))
        nva.append(field("last-modified", written, ends.etag..<ends.lastModified, copied))
        nva.append(field("cache-control", values, parts.cacheControlRange, kept))
        if let vary = parts.varyRange { nva.append(field("vary", values, vary, kept)) }
        if form != .notModified { nva.append(fixed("x-content-type-options", "nosniff")) }
    }
}
