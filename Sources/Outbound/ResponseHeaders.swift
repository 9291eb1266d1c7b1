/// A response's header fields as an outbound client receives them, one line at a time, parsed as
/// bytes and bounded (`maximumBytes`). What each user reads of them is its own (ACME's
/// Replay-Nonce and Link, `aasad check`'s Content-Type and Location).
public struct ResponseHeaders: Sendable, Equatable {
    /// Largest header section (all lines together): real responses carry a few hundred bytes to a
    /// few kilobytes; 64 KiB is far above them and caps a server that streams header lines forever.
    public static let maximumBytes = 64 * 1024

    /// The fields as received: lower-cased names, values without surrounding white space.
    public private(set) var fields: [(name: String, value: [UInt8])] = []
    private var totalBytes = 0

    public init() {}

    public static func == (a: ResponseHeaders, b: ResponseHeaders) -> Bool {
        a.fields.count == b.fields.count && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// Adds one header line as libcurl hands it over (`Name: value\r\n`). The status line, a
    /// blank line and lines without a colon are skipped; a new status line (a response after
    /// `100 Continue` or a proxy's) starts over. False once the section is over
    /// `maximumBytes`: the caller stops the transfer.
    public mutating func add(line: some Collection<UInt8>) -> Bool {
        totalBytes += line.count
        guard totalBytes <= Self.maximumBytes else { return false }
        let bytes = Array(line)
        if bytes.starts(with: Array("HTTP/".utf8)) {
            fields.removeAll()
            return true
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return true }
        let name = bytes[..<colon]
        // RFC 9110 §5.1: a field name is a token; anything else is no field we read.
        guard name.allSatisfy(Self.isTokenByte) else { return true }
        var value = bytes[(colon + 1)...]
        while let c = value.first, c == 0x20 || c == 0x09 { value = value.dropFirst() }
        while let c = value.last, c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A { value = value.dropLast() }
        fields.append((String(decoding: name, as: UTF8.self).lowercased(), Array(value)))
        return true
    }

    public static func isTokenByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || Array("!#$%&'*+-.^_`|~".utf8).contains(c)
    }

    /// The first value of `name` (lower case).
    public func first(_ name: String) -> [UInt8]? { fields.first { $0.name == name }?.value }
}
