/// Request header values the server interprets, as pure functions over the bytes as sent: shared
/// by HTTP/1.1 and HTTP/2, and fuzzed on their own (Fuzz/FuzzFields.swift). Nothing here can trap
/// on input: every index is checked against the buffer's count.
public enum HTTPFields {
    /// RFC 9110 §13.1.1–13.1.3: If-None-Match (weak comparison, lists, `*`) decides when present;
    /// otherwise If-Modified-Since, compared with the file's Last-Modified. An If-Modified-Since
    /// that is no valid HTTP date is ignored (§13.1.3).
    public static func notModified(
        etag: String, lastModified: Int64, ifNoneMatch: UnsafeRawBufferPointer?, ifModifiedSince: UnsafeRawBufferPointer?
    ) -> Bool {
        if let ifNoneMatch { return matches(ifNoneMatch: ifNoneMatch, etag: etag) }
        if let ifModifiedSince, let since = HTTPDate.parse(ifModifiedSince) { return lastModified <= since }
        return false
    }

    /// Whether an If-None-Match value (`*`, or a comma-separated list of entity tags, RFC 9110
    /// §8.8.3) matches `etag` by weak comparison (§8.8.3.2: `W/` is ignored on either side).
    public static func matches(ifNoneMatch value: UnsafeRawBufferPointer, etag: String) -> Bool {
        var tag = etag.utf8[...]
        if tag.starts(with: "W/".utf8) { tag = tag.dropFirst(2) }
        let count = value.count
        var i = 0
        while i < count {
            while i < count && (value[i] == 44 || value[i] == 32 || value[i] == 9) { i += 1 }  // "," and OWS
            guard i < count else { break }
            if value[i] == 42 { return true }  // *
            if i + 1 < count && value[i] == 87 && value[i + 1] == 47 { i += 2 }  // W/
            let start = i
            if i < count && value[i] == 34 {
                // A quoted opaque-tag: up to and including the closing quote (or the end).
                i += 1
                while i < count && value[i] != 34 { i += 1 }
                if i < count { i += 1 }
            } else {
                // Not an entity tag: skipped up to the next comma, so a list goes on.
                while i < count && value[i] != 44 { i += 1 }
            }
            if UnsafeRawBufferPointer(rebasing: value[start..<i]).elementsEqual(tag) { return true }
        }
        return false
    }

    /// A Host (or `:authority`) value as the snapshot keys it: ASCII lower case, port and one
    /// trailing dot removed (RFC 9110 §7.2, RFC 3986 §3.2.2). The brackets of an IPv6 literal are
    /// kept; an unclosed one keeps the whole value, which then names no site.
    public static func normalizeHost(_ raw: UnsafeRawBufferPointer) -> String {
        var end = raw.count
        if raw.first == 91 {  // [v6]:port
            if let close = raw.firstIndex(of: 93) { end = close + 1 }
        } else if let colon = raw.firstIndex(of: 58) {
            end = colon
        }
        if end > 0 && raw[end - 1] == 46 { end -= 1 }
        return String(unsafeUninitializedCapacity: end) { buffer in
            for k in 0..<end {
                let c = raw[k]
                buffer[k] = c >= 65 && c <= 90 ? c + 32 : c
            }
            return end
        }
    }

    /// Whether an `Accept-Encoding` value admits gzip: unless given `q=0` (RFC 9110 §12.5.3). An
    /// explicit gzip (or x-gzip) decides; `*` stands for it unless gzip is named.
    public static func acceptsGzip(_ b: UnsafeRawBufferPointer) -> Bool {
        let r = 0..<b.count
        var i = r.lowerBound
        var result = false
        while i < r.upperBound {
            while i < r.upperBound && (b[i] == 44 || b[i] == 32 || b[i] == 9) { i += 1 }
            let s = i
            while i < r.upperBound && b[i] != 44 && b[i] != 59 && b[i] != 32 && b[i] != 9 { i += 1 }
            let coding = UnsafeRawBufferPointer(rebasing: b[s..<i])
            var zero = false
            while i < r.upperBound && b[i] != 44 {
                if b[i] == 61, i + 1 < r.upperBound {  // "q=0", "q=0.0", "q=0.000"
                    var k = i + 1
                    if b[k] == 48 {
                        k += 1
                        if k < r.upperBound && b[k] == 46 { k += 1 }
                        while k < r.upperBound && b[k] == 48 { k += 1 }
                        zero = k >= r.upperBound || b[k] == 44 || b[k] == 32 || b[k] == 59
                    }
                }
                i += 1
            }
            if equalsLowercase(coding, "gzip") || equalsLowercase(coding, "x-gzip") { return !zero }
            if coding.count == 1 && coding[0] == 42 { result = !zero }
        }
        return result
    }

    /// Whether `bytes` equal the lower-case ASCII `literal`, ignoring ASCII case in `bytes`.
    @inline(__always)
    public static func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let p = literal.utf8Start
        for k in 0..<bytes.count {
            var c = bytes[k]
            if c >= 65 && c <= 90 { c += 32 }
            if c != p[k] { return false }
        }
        return true
    }
}
