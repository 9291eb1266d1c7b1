/// A response's header fields, prepared once in both framings (when a site loads, or once per
/// error status): the HTTP/1.1 lines, and the HTTP/2 field list with lower-case names. No
/// response is parsed back from HTTP/1 text per request. A class: a response refers to its fields
/// with one reference, however many forms they are kept in.
public final class PreparedFields: Sendable, Equatable {
    /// `Name: value\r\n` lines.
    public let http1: [UInt8]
    /// Every HTTP/2 name and value, back to back: names in lower case; connection-specific
    /// fields (RFC 9113 §8.2.2) left out.
    public let http2Bytes: [UInt8]
    /// Where each field of `http2Bytes` is: name offset, name length, value offset, value length.
    public let http2Spans: [Span]

    /// Offsets and lengths as 32-bit numbers: a prepared field list is a few hundred bytes, and
    /// at 100,000 sites each holding four lists, 16 bytes a field instead of 32 is megabytes.
    public struct Span: Sendable, Equatable {
        private let offsets: (name: UInt32, nameLength: UInt32, value: UInt32, valueLength: UInt32)

        /// Lists are built from configuration values (site.yaml is at most 64 KB, an environment
        /// variable 128 KB) and fixed text, so no offset comes near 4 GB.
        init(name: Int, nameLength: Int, value: Int, valueLength: Int) {
            offsets = (
                UInt32(truncatingIfNeeded: name), UInt32(truncatingIfNeeded: nameLength), UInt32(truncatingIfNeeded: value),
                UInt32(truncatingIfNeeded: valueLength)
            )
        }

        public var name: Int { Int(offsets.name) }
        public var nameLength: Int { Int(offsets.nameLength) }
        public var value: Int { Int(offsets.value) }
        public var valueLength: Int { Int(offsets.valueLength) }

        public static func == (a: Span, b: Span) -> Bool { a.offsets == b.offsets }
    }

    /// Fields as (name, value) pairs. Names and values must already be valid field syntax (the
    /// callers' values went through `HTTPField.valueProblem`).
    public init(_ fields: [(name: String, value: String)]) {
        // Sized exactly before filling: the lists live as long as their site, and arrays grown by
        // appending keep up to twice the bytes they hold.
        var lineCount = 0
        var byteCount = 0
        var spanCount = 0
        for (name, value) in fields {
            lineCount += name.utf8.count + value.utf8.count + 4
            byteCount += name.utf8.count + value.utf8.count
            spanCount += 1
        }
        var lines: [UInt8] = []
        var bytes: [UInt8] = []
        var spans: [Span] = []
        lines.reserveCapacity(lineCount)
        bytes.reserveCapacity(byteCount)
        spans.reserveCapacity(spanCount)
        for (name, value) in fields {
            lines.append(contentsOf: name.utf8)
            lines.append(contentsOf: ": ".utf8)
            lines.append(contentsOf: value.utf8)
            lines.append(contentsOf: "\r\n".utf8)
            // Lower-cased as bytes (field names are ASCII tokens): a start at 100,000 sites builds
            // 400,000 lists, and a String per name was most of their cost. (No slice of `bytes` is
            // taken while it is filled: one would share its buffer, and the next append copy it
            // into a doubled one.)
            if Self.connectionSpecific.contains(where: { $0.elementsEqual(name.utf8.lazy.map(Self.lowercased)) }) { continue }
            let start = bytes.count
            for byte in name.utf8 { bytes.append(Self.lowercased(byte)) }
            let nameLength = bytes.count - start
            spans.append(Span(name: start, nameLength: nameLength, value: start + nameLength, valueLength: value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }
        http1 = lines
        http2Bytes = bytes
        http2Spans = spans
    }

    /// Fields HTTP/2 does not carry (RFC 9113 §8.2.2 names Connection, Keep-Alive,
    /// Proxy-Connection, Transfer-Encoding and Upgrade), lower case.
    private static let connectionSpecific: [[UInt8]] = [
        Array(FieldName.connection.utf8), Array("keep-alive".utf8), Array("proxy-connection".utf8),
        Array(FieldName.transferEncoding.utf8), Array("upgrade".utf8),
    ]

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// No fields.
    public static let none = PreparedFields([])

    public static func == (a: PreparedFields, b: PreparedFields) -> Bool {
        a === b || (a.http1 == b.http1 && a.http2Bytes == b.http2Bytes && a.http2Spans == b.http2Spans)
    }

    /// The value of the first field named `name` (any case), for tests and diagnostics.
    public func value(of name: String) -> String? {
        let lower = name.lowercased()
        for span in http2Spans {
            let fieldName = String(decoding: http2Bytes[span.name..<(span.name + span.nameLength)], as: UTF8.self)
            if fieldName == lower { return String(decoding: http2Bytes[span.value..<(span.value + span.valueLength)], as: UTF8.self) }
        }
        return nil
    }
}
