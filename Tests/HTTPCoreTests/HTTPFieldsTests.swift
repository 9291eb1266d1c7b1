import Testing

@testable import HTTPCore

private func matches(_ value: String, _ etag: String = "\"abc\"") -> Bool {
    Array(value.utf8).withUnsafeBytes { HTTPFields.matches(ifNoneMatch: $0, etag: etag) }
}

private func normalize(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes(HTTPFields.normalizeHost) }

@Suite("Request field values: If-None-Match, If-Modified-Since, Host")
struct HTTPFieldsTests {
    @Test(
        "If-None-Match lists match by weak comparison (RFC 9110 §8.8.3.2, §13.1.2)",
        arguments: [
            ("\"abc\"", true), ("W/\"abc\"", true), ("*", true), ("\"x\", \"abc\"", true), ("\"x\",\"abc\"", true),
            ("  ,, \"abc\" ,", true), ("\"x\", *", true), ("\"x\"", false), ("\"ab\"", false), ("abc", false),
            ("\"abc", false), ("", false), (",,,", false), ("W/", false), ("W", false), ("\"", false),
            ("W/W/\"abc\"", false), ("\"abcd\"", false), ("x, \"abc\"", true), ("\t\"abc\"", true),
        ] as [(String, Bool)])
    func ifNoneMatch(_ value: String, _ expected: Bool) {
        #expect(matches(value) == expected, "\(value)")
    }

    @Test("a weak server tag matches its strong form and its weak form")
    func weakServerTag() {
        #expect(matches("\"abc\"", "W/\"abc\""))
        #expect(matches("W/\"abc\"", "W/\"abc\""))
    }

    @Test("If-Modified-Since gives 304 only for a valid date at or after Last-Modified; If-None-Match decides when present")
    func conditional() {
        func notModified(inm: String?, ims: String?) -> Bool {
            let inmBytes = inm.map { Array($0.utf8) }
            let imsBytes = ims.map { Array($0.utf8) }
            return (inmBytes ?? []).withUnsafeBytes { inmBuffer in
                (imsBytes ?? []).withUnsafeBytes { imsBuffer in
                    HTTPFields.notModified(
                        etag: "\"abc\"", lastModified: 784_111_777, ifNoneMatch: inmBytes == nil ? nil : inmBuffer,
                        ifModifiedSince: imsBytes == nil ? nil : imsBuffer)
                }
            }
        }
        #expect(notModified(inm: nil, ims: "Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(notModified(inm: nil, ims: "Sun, 06 Nov 1994 08:49:38 GMT"))
        #expect(!notModified(inm: nil, ims: "Sun, 06 Nov 1994 08:49:36 GMT"))
        #expect(!notModified(inm: nil, ims: "Sun, 06 Nov 3000000000 08:49:37 GMT"), "a hostile date is ignored")
        #expect(!notModified(inm: nil, ims: "garbage"))
        #expect(!notModified(inm: "\"x\"", ims: "Sun, 06 Nov 1994 08:49:38 GMT"), "If-None-Match decides")
        #expect(notModified(inm: "\"abc\"", ims: "Sun, 06 Nov 1994 08:49:36 GMT"))
        #expect(!notModified(inm: nil, ims: nil))
    }

    @Test(
        "Host values normalise as the snapshot keys them (lower case, no port, no trailing dot)",
        arguments: [
            ("A.Example", "a.example"), ("a.example:443", "a.example"), ("a.example.", "a.example"), ("a.example.:8443", "a.example"),
            ("[::1]:8443", "[::1]"), ("[::1]", "[::1]"), ("[::1", "[::1"), ("[", "["), (":", ""), ("", ""), (".", ""), (":80", ""),
            ("..", "."), ("A:B:C", "a"), ("[::1].", "[::1]"),
        ] as [(String, String)])
    func host(_ raw: String, _ expected: String) {
        #expect(normalize(Array(raw.utf8)) == expected, "\(raw)")
    }

    @Test("any bytes normalise without a trap; invalid UTF-8 becomes replacement characters")
    func hostBytes() {
        #expect(normalize([0xFF, 0x41]) == "\u{FFFD}a")
        for b in 0...255 { _ = normalize([UInt8(b), UInt8(b)]) }
    }
}
