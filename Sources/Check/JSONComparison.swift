import Hashing
import StrictJSON

/// Whether two JSON documents say the same thing, as Apple's CDN copy is compared with the
/// origin's file: the CDN stores the file parsed and writes it out again, so whitespace, member
/// order and number spelling (`1.0`, `1e0`) may differ while the content is the same.
public enum JSONComparison {
    /// True when both parse and hold the same content; false when either does not parse.
    public static func sameContent(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard let x = canonical(a), let y = canonical(b) else { return false }
        return x == y
    }

    /// SHA-256 of the canonical form: what the CDN watch keeps of each copy (32 bytes, not the
    /// file) to compare it with the origin's later. Nil when the bytes are not JSON.
    public static func digest(_ bytes: [UInt8]) -> [UInt8]? {
        canonical(bytes).map(Digest.sha256)
    }

    /// One spelling per content: objects with their members sorted by key (a duplicate key
    /// counts as its last value, as Apple's decoder and Go's keep it), arrays in order, numbers
    /// by value, strings escaped one way. Nil when the bytes are not JSON.
    public static func canonical(_ bytes: [UInt8]) -> [UInt8]? {
        guard let value = try? JSONParser.parse(bytes) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        write(value, into: &out)
        return out
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value.kind {
        case .object(let members):
            var last: [String: JSONValue] = [:]
            for member in members { last[member.key] = member.value }
            out.append(UInt8(ascii: "{"))
            for (index, key) in last.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += JSONValue.quote(key).utf8
                out.append(UInt8(ascii: ":"))
                write(last[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let text):
            out += JSONValue.quote(text).utf8
        case .number(let text):
            if let number = Double(text), number.isFinite { out += "\(number)".utf8 } else { out += text.utf8 }
        case .bool(let flag):
            out += (flag ? "true" : "false").utf8
        case .null:
            out += "null".utf8
        }
    }
}
