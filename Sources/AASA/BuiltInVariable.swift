/// The substitution variables every file has without defining them (spec §1.9).
public enum BuiltInVariable: String, Sendable, CaseIterable {
    /// One ASCII letter, A–Z or a–z.
    case alpha
    /// One of A–Z.
    case upper
    /// One of a–z.
    case lower
    /// One of A–Z, a–z, 0–9.
    case alnum
    /// One of 0–9.
    case digit
    /// One of 0–9, A–F, a–f.
    case xdigit
    /// A region code from `Locale.isoRegionCodes` (e.g. `US`, `GB`; not `UK`).
    case region
    /// A language code from `Locale.isoLanguageCodes` (e.g. `en`, `zh`, `haw`).
    case lang

    /// Whether one scalar is in a single-character class (false for `region` and `lang`).
    func contains(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        let upper = (0x41...0x5A).contains(v)
        let lower = (0x61...0x7A).contains(v)
        let digit = (0x30...0x39).contains(v)
        switch self {
        case .alpha: return upper || lower
        case .upper: return upper
        case .lower: return lower
        case .alnum: return upper || lower || digit
        case .digit: return digit
        case .xdigit: return digit || (0x41...0x46).contains(v) || (0x61...0x66).contains(v)
        case .region, .lang: return false
        }
    }

    /// The string values of `region` and `lang`; nil for the single-character classes.
    var codes: [String]? {
        switch self {
        case .region: ISOCodes.regions
        case .lang: ISOCodes.languages
        default: nil
        }
    }
}
