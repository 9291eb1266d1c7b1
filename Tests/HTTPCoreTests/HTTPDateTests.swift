import Glibc
import Testing

@testable import HTTPCore

/// 2026-01-01T00:00:00Z, the "now" that resolves RFC 850's two-digit years in these tests.
private let now2026: Int64 = 1_767_225_600

private func parse(_ text: String) -> Int64? { HTTPDate.parse(Array(text.utf8), now: now2026) }

@Suite("HTTP dates (RFC 9110 §5.6.7)")
struct HTTPDateTests {
    @Test(
        "the three formats of RFC 9110 §5.6.7 and the edges of the calendar parse to the right second",
        arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),  // IMF-fixdate
            ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),  // RFC 850
            ("Sun Nov  6 08:49:37 1994", 784_111_777),  // asctime, one-digit day
            ("Sun Nov 16 08:49:37 1994", 784_975_777),  // asctime, two-digit day
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),  // the largest four-digit year
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),  // 2000 is a leap year
            ("Wed, 31 Dec 2008 23:59:60 GMT", 1_230_768_000),  // a leap second counts as the next minute
            ("Mon, 06 Nov 1994 08:49:37 GMT", 784_111_777),  // the weekday is not checked against the date
            ("Thursday, 01-Jan-76 00:00:00 GMT", 3_345_062_400),  // 50 years ahead of 2026: still the future
            ("Friday, 01-Jan-77 00:00:00 GMT", 220_924_800),  // more than 50 years ahead: the past century
        ] as [(String, Int64)])
    func valid(_ text: String, _ seconds: Int64) {
        #expect(parse(text) == seconds, "\(text)")
    }

    @Test(
        "hostile and malformed dates are refused (nil: the header is ignored), never a trap",
        arguments: [
            "Sun, 06 Nov 3000000000 08:49:37 GMT",  // a year that once trapped in Int32(...)
            "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",  // beyond Int64
            "Sun, 06 Nov 9223372036854775808 08:49:37 GMT",
            "Sun, 06 Nov 10000 08:49:37 GMT",  // five-digit year
            "Sun, 06 Nov 01994 08:49:37 GMT",  // zero-padded to five digits
            "Sun, 06 Nov -1994 08:49:37 GMT",  // negative
            "Sun, 06 Nov +1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year in IMF-fixdate
            "Sun, 006 Nov 1994 08:49:37 GMT",  // three-digit day
            "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day in IMF-fixdate
            "Sun, -6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 008:49:37 GMT",  // three-digit hour
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:037 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",  // hour out of range
            "Sun, 06 Nov 1994 08:60:00 GMT",  // minute out of range
            "Sun, 06 Nov 1994 08:49:61 GMT",  // second beyond a leap second
            "Sun, 00 Nov 1994 08:49:37 GMT",  // day 0
            "Sun, 31 Nov 1994 08:49:37 GMT",  // November has 30 days
            "Sun, 32 Jan 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",  // 1900 is not a leap year
            "Sun, 29 Feb 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",  // names are case-sensitive
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 gmt",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Xyz 1994 08:49:37 GMT",
            "Su, 06 Nov 1994 08:49:37 GMT",  // weekday too short
            "Sund, 06 Nov 1994 08:49:37 GMT",  // weekday neither short nor long
            "Sundayy, 06-Nov-94 08:49:37 GMT",
            "Wednesdayy, 06-Nov-94 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 with a short weekday
            "Sunday, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate with a long weekday
            "Sunday, 06-Nov-1994 08:49:37 GMT",  // RFC 850 with a four-digit year
            "Sunday, 06-Nov-994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",  // asctime's one-digit day needs its leading space
            "Sun Nov  6 08:49:37 94",
            "Sun Nov  6 08:49:37 19945",
            "Sun Nov  6 08:49:37 1994 GMT",
            "Sun, 06 Nov 1994 GMT",  // missing fields
            "Sun, Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37",
            " Sun, 06 Nov 1994 08:49:37 GMT",  // surrounding white space
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun,  06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{0}",
            "Sun, ٠٦ Nov 1994 08:49:37 GMT",  // non-ASCII digits
            "", "Sun", "Sun,", "Sunday", ",", "Sun, 06 Nov 1994 08:49:37 GMTGMT",
        ])
    func refused(_ text: String) {
        #expect(parse(text) == nil, "\(text)")
    }

    @Test("every proper prefix of a valid date is refused (a date cut short is no date)")
    func prefixes() {
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            let bytes = Array(text.utf8)
            for length in 0..<bytes.count { #expect(HTTPDate.parse(bytes[..<length], now: now2026) == nil, "\(bytes[..<length])") }
        }
    }

    @Test("what format writes, parse reads back to the same second, from 1970 to 9999")
    func roundTrip() {
        var seconds: Int64 = 0
        var checked = 0
        while seconds <= 253_402_300_799 {
            #expect(HTTPDate.parse(Array(HTTPDate.format(seconds).utf8)) == seconds, "\(HTTPDate.format(seconds))")
            seconds += 9_876_543_211  // about every 313 years, at a different time of day each step
            checked += 1
        }
        for seconds: Int64 in [951_782_399, 951_782_400, 951_868_799, 4_107_542_399, 4_107_542_400] {
            #expect(HTTPDate.parse(Array(HTTPDate.format(seconds).utf8)) == seconds, "\(HTTPDate.format(seconds))")
        }
        #expect(checked > 20)
    }

    @Test("parse agrees with the C library's timegm on every day of a leap year and a common year")
    func agreesWithTimegm() {
        for start: Int64 in [946_684_800, 978_307_200] {  // 2000-01-01 and 2001-01-01
            for day: Int64 in 0..<366 {
                let seconds = start + day * 86_400 + day * 37
                var t = time_t(seconds)
                var tm = Glibc.tm()
                gmtime_r(&t, &tm)
                #expect(HTTPDate.parse(Array(HTTPDate.format(seconds).utf8)) == Int64(timegm(&tm)))
            }
        }
    }
}
