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
}
