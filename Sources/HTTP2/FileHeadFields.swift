import CAASANghttp2
import HTTPCore

/// A served file's head as an HTTP/2 field list (`HTTP2Session.respond`): the same fields in the
/// same order as its HTTP/1.1 lines (`FileHead`), names in lower case. Names and fixed values are
/// static text, taken uncopied; the shared parts' values are taken uncopied when the response's
/// entry keeps them alive (it has a body) and copied otherwise; the values written per head
/// (`FileHeadCache.withHTTP2Values`, the worker's) are always copied, during the submit.
extension FileHead {
    /// Where `FileHeadCache.withHTTP2Values` ended each value: Content-Length (empty for a 304),
    /// ETag, Last-Modified.
    struct ValueEnds {
        var length: Int
        var etag: Int
        var lastModified: Int
    }

    /// Appends the fields to `nva`: `values` is `parts.values`, `written` what
    /// `FileHeadCache.withHTTP2Values` gave, both alive until the submit returns.
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

    /// Points the written values' entries of a list `appendHTTP2` made for a head of the same
    /// parts and form (after `lead` entries) at this response's `written`.
    func repointHTTP2(written: UnsafeBufferPointer<UInt8>, ends: ValueEnds, after lead: Int, in nva: inout [nghttp2_nv]) {
        guard let base = written.baseAddress.map(UnsafeMutablePointer.init(mutating:)) else { return }
        var i = lead + (form == .ok ? 1 : form == .gzip ? 2 : 0)
        if form != .notModified {
            nva[i].value = base
            nva[i].valuelen = ends.length
            i += 1
        }
        nva[i].value = base + ends.length
        nva[i].valuelen = ends.etag - ends.length
        nva[i + 1].value = base + ends.etag
        nva[i + 1].valuelen = ends.lastModified - ends.etag
    }
}

extension FileHeadCache {
    /// Calls `body` with `head`'s Content-Length digits (not for a 304), ETag and Last-Modified
    /// date back to back, as the worker's cache holds them (kept from the last response when it
    /// was the same head, else written now), and where each ends.
    mutating func withHTTP2Values<R>(_ head: FileHead, _ body: (UnsafeBufferPointer<UInt8>, FileHead.ValueEnds) -> R) -> R {
        holdHTTP2Values(head)
        let ends = http2Ends
        return http2.withUnsafeBufferPointer { values in
            body(
                UnsafeBufferPointer(start: values.baseAddress, count: ends.end),
                FileHead.ValueEnds(length: ends.length, etag: ends.etag, lastModified: ends.end))
        }
    }
}
