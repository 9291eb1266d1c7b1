import Glibc

/// The fields of a served file's responses as they were built when every file kept its own
/// prepared lists (a 200 and a 304, and the same for the gzip form), written again here from
/// that code with nothing of the server's: what the heads composed when answering must equal,
/// byte for byte, in both framings.
package enum ReferenceHeads {
    /// The file's side: its identity body's length and ETag, and its gzip form when served.
    package struct File {
        package var contentType = "application/json"
        package var cacheControl = "max-age=300"
        package var varyUserAgent = false
        package var length: Int
        package var etag: String
        package var lastModified: Int64

        package init(
            contentType: String = "application/json", cacheControl: String = "max-age=300", varyUserAgent: Bool = false, length: Int,
            etag: String, lastModified: Int64
        ) {
            self.contentType = contentType
            self.cacheControl = cacheControl
            self.varyUserAgent = varyUserAgent
            self.length = length
            self.etag = etag
            self.lastModified = lastModified
        }
    }

    /// A 200 (`gzip`: of the gzip form, its length and ETag) or a 304.
    package static func fields(_ file: File, gzip: (length: Int, etag: String)? = nil, notModified: Bool = false) -> [(
        name: String, value: String
    )] {
        let etag = gzip?.etag ?? file.etag
        let varied = (file.length >= 256 ? ["Accept-Encoding"] : []) + (file.varyUserAgent ? ["User-Agent"] : [])
        let vary: [(name: String, value: String)] = varied.isEmpty ? [] : [(name: "Vary", value: varied.joined(separator: ", "))]
        let common = [(name: "Last-Modified", value: date(file.lastModified)), (name: "Cache-Control", value: file.cacheControl)] + vary
        if notModified { return [(name: "ETag", value: etag)] + common }
        if let gzip {
            return [
                (name: "Content-Type", value: file.contentType), (name: "Content-Encoding", value: "gzip"),
                (name: "Content-Length", value: "\(gzip.length)"), (name: "ETag", value: etag),
            ] + common + [(name: "X-Content-Type-Options", value: "nosniff")]
        }
        return [
            (name: "Content-Type", value: file.contentType), (name: "Content-Length", value: "\(file.length)"), (name: "ETag", value: etag),
        ] + common + [(name: "X-Content-Type-Options", value: "nosniff")]
    }

    /// `Name: value\r\n` lines.
    package static func http1(_ fields: [(name: String, value: String)]) -> [UInt8] {
        Array(fields.map { "\($0.name): \($0.value)\r\n" }.joined().utf8)
    }

    /// The HTTP/2 list: names in lower case, connection-specific fields left out.
    package static func http2(_ fields: [(name: String, value: String)]) -> [String] {
        let connectionSpecific: Set = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]
        return fields.map { ($0.name.lowercased(), $0.value) }.filter { !connectionSpecific.contains($0.0) }.map { "\($0.0): \($0.1)" }
    }

    /// IMF-fixdate through gmtime_r, as every time was formatted then (for any time: out of
    /// gmtime's range its year stays 1900 and its day 00).
    package static func date(_ seconds: Int64) -> String {
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var t = time_t(seconds)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(Int(tm.tm_year) + 1900) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }

    /// Times a served file may carry, the awkward ones first: before 1970, the last second with
    /// a four-digit year and the first past it, and those gmtime cannot break down.
    package static let times: [Int64] = [
        -1, 0, 59, 86_399, 86_400, 951_782_400, 1_700_000_000, 2_147_483_647, 2_147_483_648, 253_402_300_799, 253_402_300_800,
        -62_135_596_800, -62_135_596_801, 67_768_036_191_676_799, 67_768_036_191_676_800, Int64.max, Int64.min,
    ]
}
