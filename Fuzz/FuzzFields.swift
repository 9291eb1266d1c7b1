// libFuzzer entry point over the request field values the server interprets: HTTP dates
// (If-Modified-Since), If-None-Match lists and Host normalisation. Built by scripts/fuzz.sh
// together with Sources/HTTPCore as one module (hence no import). Besides not trapping (issue 10:
// a ten-digit year once stopped the server), each function must keep its contract; the checks are
// repeated in Tests/HTTPCoreTests/FieldsFuzzReplayTests.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    checkFieldValue(bytes)
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
