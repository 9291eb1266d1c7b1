import Glibc

/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out, all three formats in.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the Unix epoch.
    public static func format(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return
            "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }

    /// `06/Nov/1994:08:49:37 +0000`, the Common Log Format's time (access logs).
    public static func common(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return
            "\(two(tm.tm_mday))/\(months[Int(tm.tm_mon)])/\(tm.tm_year + 1900):\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) +0000"
    }

    /// `1994-11-06T08:49:37Z` (RFC 3339, UTC).
    public static func iso8601(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }

    private static func broken(_ seconds: Int64) -> Glibc.tm {
        var t = time_t(seconds)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        return tm
    }

    private static func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }

    /// Seconds since the epoch of an HTTP date in IMF-fixdate, RFC 850 or asctime form; nil when
    /// the text is none of them (the header is then ignored, RFC 9110 §13.1.3).
    public static func parse(_ text: some Collection<UInt8>) -> Int64? {
        let s = String(decoding: text, as: UTF8.self)
        let parts = s.split(separator: " ", omittingEmptySubsequences: true)
        var day: Int?
        var month: Int?
        var year: Int?
        var clock: Substring?
        if parts.count == 6, parts[5] == "GMT", parts[0].hasSuffix(",") {  // IMF-fixdate
            day = Int(parts[1])
            month = months.firstIndex(of: String(parts[2]))
            year = Int(parts[3])
            clock = parts[4]
        } else if parts.count == 4, parts[3] == "GMT", parts[0].hasSuffix(",") {  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let dmy = parts[1].split(separator: "-")
            guard dmy.count == 3, let yy = Int(dmy[2]) else { return nil }
            day = Int(dmy[0])
            month = months.firstIndex(of: String(dmy[1]))
            year = yy < 70 ? 2000 + yy : (yy < 100 ? 1900 + yy : yy)
            clock = parts[2]
        } else if parts.count == 5 {  // asctime: Sun Nov  6 08:49:37 1994
            month = months.firstIndex(of: String(parts[1]))
            day = Int(parts[2])
            clock = parts[3]
            year = Int(parts[4])
        }
        guard let day, let month, let year, let clock, (1...31).contains(day), year >= 1970 else { return nil }
        let hms = clock.split(separator: ":")
        guard hms.count == 3, let h = Int(hms[0]), let m = Int(hms[1]), let sec = Int(hms[2]), h < 24, m < 60, sec < 61 else {
            return nil
        }
        var tm = Glibc.tm()
        tm.tm_year = Int32(year - 1900)
        tm.tm_mon = Int32(month)
        tm.tm_mday = Int32(day)
        tm.tm_hour = Int32(h)
        tm.tm_min = Int32(m)
        tm.tm_sec = Int32(sec)
        return Int64(timegm(&tm))
    }
}
