import Glibc

/// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out, all three formats in.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the Unix epoch.
    public static func format(_ seconds: Int64) -> String {
        guard fixedRange.contains(seconds) else { return formatBroken(seconds) }
        var out: [UInt8] = []
        out.reserveCapacity(fixedLength)
        write(seconds, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Through gmtime_r, as every time was formatted before `write`: the times outside
    /// `fixedRange` (a file dated before 1970 or after 9999, or a time gmtime cannot break down:
    /// its year then stays 1900 and its day 00), and the reference the tests compare `write` with.
    static func formatBroken(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return
            "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(Int(tm.tm_year) + 1900) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }

    /// Times whose IMF-fixdate has a four-digit year: 1970-01-01 to 9999-12-31, always
    /// `fixedLength` bytes.
    public static let fixedRange: ClosedRange<Int64> = 0...253_402_300_799
    public static let fixedLength = 29
    /// Room `write(_:to:)` needs for any time (outside `fixedRange`, gmtime's years have up to
    /// eleven characters: 37 bytes in all).
    public static let maximumLength = 48

    /// Appends `format(seconds)`'s bytes to `out` without a String.
    public static func write(_ seconds: Int64, into out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximumLength) { buffer in
            let count = write(seconds, to: buffer.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// Writes `format(seconds)`'s bytes at `to`, which has room for `maximumLength`, and returns
    /// how many: a served file's Last-Modified, written into each response (docs/architecture.md,
    /// "Prepared responses"). Inside `fixedRange` by arithmetic (days to a civil date, H.
    /// Hinnant's `civil_from_days`), with no lock (gmtime_r takes glibc's time-zone lock);
    /// outside it through `formatBroken`.
    public static func write(_ seconds: Int64, to text: UnsafeMutablePointer<UInt8>) -> Int {
        guard seconds >= 0 && seconds <= 253_402_300_799 else {
            var count = 0
            for byte in formatBroken(seconds).utf8.prefix(maximumLength) {
                text[count] = byte
                count += 1
            }
            return count
        }
        let days = Int(seconds / 86_400)
        let clock = Int(seconds % 86_400)
        // Days since 0000-03-01, in 400-year eras of 146,097 days (positive here).
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = (days + 4) % 7  // 1970-01-01 was a Thursday
        let hour = clock / 3_600
        let minute = clock / 60 % 60
        let second = clock % 60
        func digit(_ value: Int) -> UInt8 { UInt8(truncatingIfNeeded: 48 + value) }
        let names = Self.names.utf8Start
        text[0] = names[weekday * 3]
        text[1] = names[weekday * 3 + 1]
        text[2] = names[weekday * 3 + 2]
        text[3] = 44  // ","
        text[4] = 32
        text[5] = digit(day / 10)
        text[6] = digit(day % 10)
        text[7] = 32
        text[8] = names[18 + month * 3]
        text[9] = names[19 + month * 3]
        text[10] = names[20 + month * 3]
        text[11] = 32
        text[12] = digit(year / 1_000)
        text[13] = digit(year / 100 % 10)
        text[14] = digit(year / 10 % 10)
        text[15] = digit(year % 10)
        text[16] = 32
        text[17] = digit(hour / 10)
        text[18] = digit(hour % 10)
        text[19] = 58  // ":"
        text[20] = digit(minute / 10)
        text[21] = digit(minute % 10)
        text[22] = 58
        text[23] = digit(second / 10)
        text[24] = digit(second % 10)
        text[25] = 32
        text[26] = 71  // "GMT"
        text[27] = 77
        text[28] = 84
        return fixedLength
    }

    /// The day names from Sunday, then the month names, three letters each (January at 21).
    private static let names: StaticString = "SunMonTueWedThuFriSatJanFebMarAprMayJunJulAugSepOctNovDec"

    /// `06/Nov/1994:08:49:37 +0000`, the Common Log Format's time (access logs).
    public static func common(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return
            "\(two(tm.tm_mday))/\(months[Int(tm.tm_mon)])/\(Int(tm.tm_year) + 1900):\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) +0000"
    }

    /// `1994-11-06T08:49:37Z` (RFC 3339, UTC).
    public static func iso8601(_ seconds: Int64) -> String {
        let tm = broken(seconds)
        return "\(Int(tm.tm_year) + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }

    private static func broken(_ seconds: Int64) -> Glibc.tm {
        var t = time_t(seconds)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        return tm
    }

    private static func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }

    /// Seconds since the epoch of an HTTP date in IMF-fixdate, RFC 850 or asctime form (RFC 9110
    /// §5.6.7); nil when the text is none of them or a field is out of range (the header is then
    /// ignored, RFC 9110 §13.1.3).
    ///
    /// Works on the bytes as sent: every numeric field has a fixed number of digits (so no value
    /// can overflow), names are matched case-sensitively as the grammar's `%s"…"` requires, and
    /// nothing is allocated. `now` (seconds since the epoch, default the current time) only
    /// resolves RFC 850's two-digit year.
    public static func parse(_ text: UnsafeRawBufferPointer, now: Int64? = nil) -> Int64? {
        var s = DateScanner(bytes: text)
        // The longest day name is "Wednesday": more letters than that is no date.
        var nameLength = 0
        while nameLength < 10, s.position + nameLength < text.count, isLetter(text[s.position + nameLength]) { nameLength += 1 }
        let short = nameLength == 3
        guard nameLength >= 3, s.name(short ? dayNames : longDayNames) != nil else { return nil }
        let year: Int
        let month: Int
        let day: Int
        if short, s.byte(44) {
            // IMF-fixdate = day-name "," SP date1 SP time-of-day SP GMT; date1 = day SP month SP year
            guard s.byte(32), let d = s.digits(2), s.byte(32), let m = s.name(monthNames), s.byte(32), let y = s.digits(4) else {
                return nil
            }
            (day, month, year) = (d, m, y)
        } else if !short, s.byte(44) {
            // rfc850-date = day-name-l "," SP date2 SP time-of-day SP GMT; date2 = day "-" month "-" 2DIGIT
            guard s.byte(32), let d = s.digits(2), s.byte(45), let m = s.name(monthNames), s.byte(45), let yy = s.digits(2) else {
                return nil
            }
            (day, month, year) = (d, m, fullYear(twoDigits: yy, now: now ?? Int64(time(nil))))
        } else if short, s.byte(32) {
            // asctime-date = day-name SP date3 SP time-of-day SP year; date3 = month SP ( 2DIGIT / ( SP DIGIT ))
            guard let m = s.name(monthNames), s.byte(32) else { return nil }
            let d: Int?
            if s.byte(32) { d = s.digits(1) } else { d = s.digits(2) }
            guard let d, s.byte(32), let clock = s.timeOfDay(), s.byte(32), let y = s.digits(4), s.atEnd else { return nil }
            return seconds(year: y, month: m, day: d, clock)
        } else {
            return nil
        }
        guard s.byte(32), let clock = s.timeOfDay(), s.byte(32), s.byte(71), s.byte(77), s.byte(84), s.atEnd else { return nil }
        return seconds(year: year, month: month, day: day, clock)
    }

    /// The same, for any byte collection (tests, strings' UTF-8 views).
    public static func parse(_ text: some Collection<UInt8>, now: Int64? = nil) -> Int64? {
        if let result = text.withContiguousStorageIfAvailable({ parse(UnsafeRawBufferPointer($0), now: now) }) { return result }
        return Array(text).withUnsafeBytes { parse($0, now: now) }
    }

    private static let dayNames: [[UInt8]] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }
    private static let longDayNames: [[UInt8]] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].map {
        Array($0.utf8)
    }
    private static let monthNames: [[UInt8]] = months.map { Array($0.utf8) }

    private static func isLetter(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }

    /// Seconds since the epoch of an RFC 3339 §5.6 `date-time` (`2025-01-02T04:00:00Z`,
    /// `2025-01-02T04:00:00.123+02:00`), as ACME servers send them; nil for anything else or a
    /// field out of range. Fractions are dropped (at most 9 digits); `T`/`Z` may be lower case
    /// (§5.6 note). Bounded like `parse`: four-digit years, so no arithmetic can overflow.
    public static func rfc3339(_ text: some Collection<UInt8>) -> Int64? {
        let b = Array(text)
        guard b.count >= 20, b.count <= 35 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for i in from..<(from + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), b[4] == 0x2D, let month = number(5, 2), b[7] == 0x2D, let day = number(8, 2),
            b[10] | 0x20 == 0x74, let hour = number(11, 2), b[13] == 0x3A, let minute = number(14, 2), b[16] == 0x3A,
            let second = number(17, 2), (1...12).contains(month)
        else { return nil }
        var i = 19
        if b[i] == 0x2E {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            guard i > start, i - start <= 9 else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] | 0x20 == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            guard b.count - i == 6, let h = number(i + 1, 2), b[i + 3] == 0x3A, let m = number(i + 4, 2), h <= 23, m <= 59 else {
                return nil
            }
            offset = (h * 3_600 + m * 60) * (b[i] == 0x2B ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count, let local = seconds(year: year, month: month, day: day, (hour, minute, second)) else { return nil }
        return local - Int64(offset)
    }

    /// RFC 9110 §5.6.7: a two-digit year that would be more than 50 years in the future is the
    /// most recent past year with those digits.
    private static func fullYear(twoDigits yy: Int, now: Int64) -> Int {
        let current = civilYear(ofDay: Int(now / 86_400))
        var year = current - current % 100 + yy
        if year > current + 50 { year -= 100 }
        return year
    }

    /// Seconds since the epoch, or nil when a field is out of range. Every input is bounded by
    /// its digit count (year ≤ 9999), so the arithmetic cannot overflow. A leap second (60,
    /// RFC 5322 §3.3) is accepted and counts as the next minute's first second.
    private static func seconds(year: Int, month: Int, day: Int, _ clock: (hour: Int, minute: Int, second: Int)) -> Int64? {
        guard day >= 1, day <= daysIn(month: month, year: year), clock.hour <= 23, clock.minute <= 59, clock.second <= 60 else {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(clock.hour * 3_600 + clock.minute * 60 + clock.second)
    }

    /// Days in a month (1-based) of the proleptic Gregorian calendar.
    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year of a day counted from 1970-01-01 (Hinnant's civil_from_days, year part).
    private static func civilYear(ofDay days: Int) -> Int {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        return yearOfEra + era * 400 + (monthIndex >= 10 ? 1 : 0)
    }
}

/// A cursor over a date's bytes; every read checks the bounds and returns nil or false past them.
private struct DateScanner {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    var atEnd: Bool { position == bytes.count }

    /// Consumes `c` when it is next.
    mutating func byte(_ c: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == c else { return false }
        position += 1
        return true
    }

    /// Exactly `count` ASCII digits (at most 4: the value always fits).
    mutating func digits(_ count: Int) -> Int? {
        guard count <= 4, bytes.count - position >= count else { return nil }
        var value = 0
        for k in position..<(position + count) {
            let d = bytes[k] &- 48
            guard d < 10 else { return nil }
            value = value * 10 + Int(d)
        }
        position += count
        return value
    }

    /// The 1-based index of the name in `table` the bytes start with, consumed.
    mutating func name(_ table: [[UInt8]]) -> Int? {
        for (index, name) in table.enumerated() where bytes.count - position >= name.count {
            if UnsafeRawBufferPointer(rebasing: bytes[position..<(position + name.count)]).equals(name) {
                position += name.count
                return index + 1
            }
        }
        return nil
    }

    /// time-of-day = hour ":" minute ":" second, two digits each.
    mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
        guard let h = digits(2), byte(58), let m = digits(2), byte(58), let s = digits(2) else { return nil }
        return (h, m, s)
    }
}
