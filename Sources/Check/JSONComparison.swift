public import AASA

/// Whether two JSON documents say the same thing, as Apple's CDN copy is compared with the
/// origin's file: the CDN stores the file parsed and writes it out again, so whitespace, member
/// order and number spelling (`1.0`, `1e0`) may differ while the content is the same.
public enum JSONComparison {
    /// True when both parse and hold the same content; false when either does not parse.
    public static func sameContent(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard let x = try? JSONParser.parse(a), let y = try? JSONParser.parse(b) else { return false }
        return same(x, y)
    }

    /// Objects compare as sets of members (a duplicate key counts as its last value, as Apple's
    /// decoder and Go's keep it), arrays in order, numbers by value, strings by their characters.
    public static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a.kind, b.kind) {
        case (.object(let x), .object(let y)):
            let left = lastByKey(x)
            let right = lastByKey(y)
            guard left.count == right.count else { return false }
            for (key, value) in left {
                guard let other = right[key], same(value, other) else { return false }
            }
            return true
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.string(let x), .string(let y)):
            return x == y
        case (.number(let x), .number(let y)):
            return x == y || (Double(x).map { $0 == Double(y) } ?? false)
        case (.bool(let x), .bool(let y)):
            return x == y
        case (.null, .null):
            return true
        default:
            return false
        }
    }

    private static func lastByKey(_ members: [JSONMember]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for member in members { out[member.key] = member.value }
        return out
    }
}
