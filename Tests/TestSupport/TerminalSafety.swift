package import Testing

/// What a terminal must never receive from text the program did not write: C0 controls (CR and
/// LF inside a line included), DEL, C1 controls, the line separators and bidi formatting.
func isDangerous(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}

/// Output split at LF bytes only (a String splits "\r\n" as one character), each line kept with
/// any CR it holds.
package func splitLines(_ text: String) -> [String] {
    text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
}

/// Every line of `text` holds only characters a terminal shows as they are (and the tabs that
/// separate `sites`' fields, with `tabs`).
package func expectClean(_ text: String, tabs: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) {
    for line in splitLines(text) where line.unicodeScalars.contains(where: { isDangerous($0) && !(tabs && $0 == "\t") }) {
        Issue.record("a control or bidi character reached the output: \(line.debugDescription)", sourceLocation: sourceLocation)
    }
}
