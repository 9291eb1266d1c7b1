package import AASA
package import Foundation

/// Writes a Codable report as JSON on standard output: sorted keys, so the output is stable for
/// scripts and golden files.
package enum JSONOutput {
    /// One line of JSON, keys sorted: for the admin endpoint and JSON logs.
    package static func compact<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return escapingFormatCharacters([UInt8]((try? encoder.encode(value)) ?? Data()))
    }

    package static func print<T: Encodable>(_ value: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        FileHandle.standardOutput.write(Data(escapingFormatCharacters([UInt8](data)) + [0x0A]))
    }

    /// JSON text with each character `TerminalText` escapes that JSONEncoder leaves raw (DEL, C1
    /// controls, U+2028/2029, bidi formatting: it escapes only C0) written as `\uHHHH`, as
    /// `JSONValue.quote` writes them for the admin endpoints: the same values once parsed, but a
    /// file name holding U+202E or CSI cannot reorder or drive the terminal that shows the JSON
    /// log or `--format json`. Outside strings JSON is ASCII, so every such character is inside one.
    package static func escapingFormatCharacters(_ json: [UInt8]) -> [UInt8] {
        // Printable ASCII, nearly every line: nothing to do (DEL, 0x7F, is escaped too).
        guard json.contains(where: { $0 >= 0x7F }) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in String(decoding: json, as: UTF8.self).unicodeScalars {
            guard scalar.value >= 0x7F, TerminalText.isEscaped(scalar) else {
                out.append(scalar)
                continue
            }
            // All of them lie in the Basic Multilingual Plane: four digits each.
            let hex = String(scalar.value, radix: 16, uppercase: true)
            out.append(contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex).unicodeScalars)
        }
        return Array(String(out).utf8)
    }
}
