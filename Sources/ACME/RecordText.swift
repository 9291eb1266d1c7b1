/// The text of the small records replicas keep in the storage directory (ChildRecords.swift,
/// ReplicaRecords.swift): one `key N` line per field, in a fixed order, N a time in seconds
/// since the epoch or a count. Parsed strictly: exactly the keys, in order, each followed by one
/// space and 1 to `maximumDigits` digits, each line ended by `\n`; anything else is not a
/// record (the caller treats it as absent), so a damaged or hostile file never yields a number
/// it did not spell out in full.
enum RecordText {
    /// Digits of a number at most: seconds since the epoch have 10 until the year 2286, and 12
    /// digits never overflow Int64 (so nothing read can trap a conversion).
    static let maximumDigits = 12
    /// The largest value a record holds: `maximumDigits` nines.
    static let maximumValue: Int64 = 999_999_999_999

    /// The record's text, each value clamped to 0...`maximumValue` so that whatever is written
    /// parses: a count taken from another replica's record and then incremented, or a time of a
    /// clock far off, would otherwise be written with more digits than a reader accepts, and the
    /// record would be absent for every replica.
    static func text(_ fields: [(key: String, value: Int64)]) -> String {
        fields.map { "\($0.key) \(min(max($0.value, 0), maximumValue))\n" }.joined()
    }

    /// The values of `keys`, in order, or nil when `bytes` is not exactly their record.
    static func parse(_ bytes: [UInt8], keys: [String]) -> [Int64]? {
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard lines.count == keys.count + 1, lines[keys.count].isEmpty else { return nil }
        var values: [Int64] = []
        for (line, key) in zip(lines, keys) {
            guard let value = number(line, key: key + " ") else { return nil }
            values.append(value)
        }
        return values
    }

    private static func number(_ line: ArraySlice<UInt8>, key: String) -> Int64? {
        let keyBytes = Array(key.utf8)
        guard line.starts(with: keyBytes) else { return nil }
        let digits = line.dropFirst(keyBytes.count)
        guard !digits.isEmpty, digits.count <= maximumDigits, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
    }
}
