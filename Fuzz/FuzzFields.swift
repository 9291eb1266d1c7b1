// libFuzzer entry point over the request field values the server interprets: HTTP dates
// (If-Modified-Since), If-None-Match lists, Host normalisation, and, for a link domain's fallback
// (docs/link-domain.md), a request path put into a redirect target and the platform a User-Agent names. Built
// by scripts/fuzz.sh together with Sources/HTTPCore as one module (hence no import). Besides not
// trapping (a ten-digit year once stopped the server), each function must keep its
// contract; the checks are repeated in Tests/HTTPCoreTests/FieldsFuzzReplayTests.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    checkFieldValue(bytes)
    checkRedirectTarget(bytes)
    checkRouteCapture(bytes)
    checkClientPlatform(bytes)
    return 0
}

/// The largest date the parser can return: Fri, 31 Dec 9999 23:59:59 GMT.
let latestDate: Int64 = 253_402_300_799
/// The earliest: Sat, 01 Jan 0000 00:00:00 GMT (proleptic Gregorian).
let earliestDate: Int64 = -62_167_219_200

func checkFieldValue(_ bytes: UnsafeRawBufferPointer) {
    // A date: in range, and what format() writes for it reads back the same.
    let date = HTTPDate.parse(bytes, now: 1_767_225_600)
    if let date {
        precondition(date >= earliestDate && date <= latestDate + 1, "a date outside four-digit years")
        if date >= 0 && date <= latestDate {
            precondition(HTTPDate.parse(Array(HTTPDate.format(date).utf8)) == date, "format and parse disagree")
        }
    }
    // An RFC 3339 timestamp (ACME's renewal windows): in range, and what iso8601() writes for a
    // UTC one reads back the same.
    if let stamp = HTTPDate.rfc3339(bytes) {
        precondition(stamp >= earliestDate - 86_400 && stamp <= latestDate + 86_400, "a timestamp outside four-digit years")
        if stamp >= 0 && stamp <= latestDate {
            precondition(HTTPDate.rfc3339(Array(HTTPDate.iso8601(stamp).utf8)) == stamp, "iso8601 and rfc3339 disagree")
        }
    }
    // If-None-Match: a match is never undone by appending another tag to the list.
    let etag = "\"abc\""
    let matched = HTTPFields.matches(ifNoneMatch: bytes, etag: etag)
    if matched {
        let longer = Array(bytes) + Array(", \"zzz\"".utf8)
        precondition(longer.withUnsafeBytes { HTTPFields.matches(ifNoneMatch: $0, etag: etag) }, "an appended tag undid a match")
    }
    // If-None-Match decides over If-Modified-Since; If-Modified-Since only with a valid date.
    precondition(
        HTTPFields.notModified(etag: etag, lastModified: 784_111_777, ifNoneMatch: bytes, ifModifiedSince: nil) == matched,
        "notModified disagrees with the matcher")
    let byDate = HTTPFields.notModified(etag: etag, lastModified: 784_111_777, ifNoneMatch: nil, ifModifiedSince: bytes)
    precondition(byDate == (HTTPDate.parse(bytes).map { 784_111_777 <= $0 } ?? false), "notModified disagrees with the date")
    // Host: ASCII lower case, no port, at most three bytes out for each byte in (replacement
    // characters for invalid UTF-8).
    let host = HTTPFields.normalizeHost(bytes)
    precondition(!host.utf8.contains { $0 >= 65 && $0 <= 90 }, "upper case left in a host")
    precondition(host.utf8.count <= 3 * bytes.count, "a host longer than its bytes allow")
    if bytes.first != 91 { precondition(!host.utf8.contains(58), "a port left in a host") }
}

/// RedirectTarget.appendPath: the target path starts with `/`, holds only bytes a URL may hold, is
/// exactly the input with each other byte (and each `%` that starts no escape) as an added `%XX`,
/// loses nothing once percent-decoded, and encoding it again changes nothing.
func checkRedirectTarget(_ bytes: UnsafeRawBufferPointer) {
    var out: [UInt8] = []
    RedirectTarget.appendPath(bytes, to: &out)
    precondition(out.first == 0x2F, "a target path without its leading /")
    precondition(out.allSatisfy(RedirectTarget.isKept), "a byte isKept refuses in a target")
    precondition(out.allSatisfy { uriBytes.contains($0) }, "a byte a URL's path and query may not hold")
    let input = Array(bytes)
    let upper = Array("0123456789ABCDEF".utf8)
    var at = input.first == 0x2F ? 0 : 1
    for (index, byte) in input.enumerated() {
        if RedirectTarget.isKept(byte) && (byte != 0x25 || startsEscape(input, index)) {
            precondition(at < out.count && out[at] == byte, "a byte not kept as sent")
            at += 1
        } else {
            precondition(
                at + 3 <= out.count && out[at] == 0x25 && out[at + 1] == upper[Int(byte >> 4)] && out[at + 2] == upper[Int(byte & 15)],
                "a byte not encoded as %XX")
            at += 3
        }
    }
    precondition(at == out.count, "bytes after the last input byte")
    precondition(percentDecoded(out) == (input.first == 0x2F ? [] : [0x2F]) + percentDecoded(input), "decoding differs")
    var again: [UInt8] = []
    out.withUnsafeBytes { RedirectTarget.appendPath($0, to: &again) }
    precondition(again == out, "encoding a target again changed it")
}

/// RedirectTarget.appendEncoded, as a route's capture fills a target: `appendPath` without the
/// `/` it may add; and a capture (one path segment: no `/`, and no `?` or `#`, which end a path)
/// stays one segment of the target's path: no `/`, `?` or `#` comes out of it.
func checkRouteCapture(_ bytes: UnsafeRawBufferPointer) {
    var encoded: [UInt8] = []
    RedirectTarget.appendEncoded(bytes, to: &encoded)
    var path: [UInt8] = []
    RedirectTarget.appendPath(bytes, to: &path)
    precondition(encoded == (bytes.first == 0x2F ? path : Array(path.dropFirst())), "a capture encoded unlike {path}")
    let segment = Array(bytes).filter { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }
    var out: [UInt8] = []
    segment.withUnsafeBytes { RedirectTarget.appendEncoded($0, to: &out) }
    precondition(!out.contains(0x2F) && !out.contains(0x3F) && !out.contains(0x23), "a capture left its segment")
}

/// ClientPlatform.of: any bytes give a platform; a suffix of space and `;` (no letter or digit) cannot
/// change it; `Windows Phone` first is web whatever follows; a device named first is never Android.
func checkClientPlatform(_ bytes: UnsafeRawBufferPointer) {
    let input = Array(bytes)
    let platform = ClientPlatform.of(userAgent: bytes)
    precondition(platformOf(input + Array(" ;".utf8)) == platform, "a suffix without letters changed the platform")
    precondition(platformOf(Array("Windows Phone ".utf8) + input) == .web, "Windows Phone did not decide first")
    precondition(platformOf(Array("(iPhone; ".utf8) + input) != .android, "Android decided before an iPhone")
}

/// What RFC 3986 allows in a path and query (§3.3, §3.4: unreserved, sub-delims, `:`, `@`, `/`, `?`)
/// and `%`, written out here apart from the encoder's own table.
let uriBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?%".utf8)

func platformOf(_ bytes: [UInt8]) -> ClientPlatform { bytes.withUnsafeBytes { ClientPlatform.of(userAgent: $0) } }

func startsEscape(_ bytes: [UInt8], _ index: Int) -> Bool {
    index + 2 < bytes.count && isHexDigit(bytes[index + 1]) && isHexDigit(bytes[index + 2])
}

func isHexDigit(_ c: UInt8) -> Bool { (48...57).contains(c) || (65...70).contains(c) || (97...102).contains(c) }

/// RFC 3986 §2.1 decoding: each `%` and two hex digits is one byte; anything else as it is.
func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        if bytes[index] == 0x25 && startsEscape(bytes, index) {
            out.append(hexValue(bytes[index + 1]) << 4 | hexValue(bytes[index + 2]))
            index += 3
        } else {
            out.append(bytes[index])
            index += 1
        }
    }
    return out
}

func hexValue(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
