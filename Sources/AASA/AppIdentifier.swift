import SafeText

/// Checks of an app identifier, `<Application Identifier Prefix>.<Bundle Identifier>` (spec §1.3).
public enum AppIdentifier {
    /// The prefix is a Team ID (or an old separate App ID prefix): 10 characters.
    public static let prefixLength = 10

    /// What is wrong with an app identifier, as a sentence with what to do; nil when it is well formed.
    ///
    /// Prefix: exactly 10 of A–Z and 0–9 (Apple issues them upper case; a lower-case prefix can never
    /// equal the signed `application-identifier`). Bundle ID: A–Z, a–z, 0–9, `-` and `.`, with no
    /// empty parts (CFBundleIdentifier rules; `_` is not allowed). What it quotes of the identifier
    /// is escaped (`TerminalText`): the sentence reaches terminals and log lines.
    public static func problem(with identifier: String) -> String? {
        let example = "write <Team ID>.<bundle ID>, e.g. \"ABCDE12345.com.example.app\""
        guard let dot = identifier.firstIndex(of: ".") else {
            return "an app identifier needs a 10-character Team ID prefix, a '.', then the bundle ID; \(example)"
        }
        let prefix = identifier[..<dot]
        let bundle = identifier[identifier.index(after: dot)...]
        if prefix.unicodeScalars.count != prefixLength {
            return "the team ID prefix must be \(prefixLength) characters (found \(prefix.unicodeScalars.count)); \(example)"
        }
        if let bad = prefix.unicodeScalars.first(where: { !(("A"..."Z").contains($0) || ("0"..."9").contains($0)) }) {
            if ("a"..."z").contains(bad) {
                return "the team ID prefix must be upper case, as Apple issues it (\"\(TerminalText.escaped(prefix.uppercased()))\")"
            }
            return "the team ID prefix may contain only A–Z and 0–9 (found '\(TerminalText.escaped(String(bad)))')"
        }
        if bundle.isEmpty {
            return "the bundle ID after the team ID is missing; \(example)"
        }
        if let bad = bundle.unicodeScalars.first(where: { !isBundleScalar($0) }) {
            return "the bundle ID may contain only A–Z, a–z, 0–9, '-' and '.' (found '\(TerminalText.escaped(String(bad)))')"
        }
        if bundle.hasPrefix(".") || bundle.hasSuffix(".") || bundle.contains("..") {
            return "the bundle ID has an empty part (a '.' at the start or end, or '..')"
        }
        return nil
    }

    /// A warning for a well-formed identifier whose prefix is ten digits, nil otherwise.
    ///
    /// Team IDs are ten letters and digits chosen by Apple; one made only of digits is possible
    /// but rare (about 3 in a million if drawn evenly from A–Z and 0–9). An App Store ID (the number
    /// in `apps.apple.com/app/id…`) is ten digits for apps published in recent years, and it is the
    /// number people copy by mistake. So this is a warning, never an error: the file may be right.
    public static func suspicion(with identifier: String) -> String? {
        guard problem(with: identifier) == nil, let dot = identifier.firstIndex(of: ".") else { return nil }
        let prefix = identifier[..<dot]
        guard prefix.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        return
            "the team ID prefix \"\(prefix)\" is all digits, which is what an App Store ID (the number in apps.apple.com/app/id\(prefix)) looks like; the prefix must be your Team ID: 10 letters and digits, shown in your Apple Developer account under Membership details. If \(prefix) really is your Team ID, ignore this warning"
    }

    private static func isBundleScalar(_ s: Unicode.Scalar) -> Bool {
        ("A"..."Z").contains(s) || ("a"..."z").contains(s) || ("0"..."9").contains(s) || s == "-" || s == "."
    }
}
