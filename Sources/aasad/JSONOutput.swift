import Foundation

/// Writes a Codable report as JSON on standard output: sorted keys, so the output is stable for
/// scripts and golden files.
enum JSONOutput {
    /// One line of JSON, keys sorted: for the admin endpoint and JSON logs.
    static func compact<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return [UInt8]((try? encoder.encode(value)) ?? Data())
    }

    static func print<T: Encodable>(_ value: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        FileHandle.standardOutput.write(data)
        FileHandle.standardOutput.write(Data("\n".utf8))
    }
}
