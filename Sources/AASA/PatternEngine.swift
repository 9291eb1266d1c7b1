import StrictJSON

/// Why a match could not be decided.
public enum MatchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Matching needed more work than the budget allows (hostile variables on a very long URL).
    case tooComplex(JSONPath)

    public var description: String {
        switch self {
        case .tooComplex(let path):
            "matching \(path) needs more work than allowed; simplify its substitution variables or shorten the URL"
        }
    }
}

/// One string under test — a path, a query, a fragment or a query item's value — with the position
/// masks the engine needs, built on first use and kept for the rest of the URL's evaluation.
final class Subject {
    let scalars: [Unicode.Scalar]
    private var folded: [Unicode.Scalar]?
    private var exactMasks: [UInt32: PositionSet] = [:]
    private var foldedMasks: [UInt32: PositionSet] = [:]
    private var classMasks: [String: PositionSet] = [:]
    private var setMasks: [String: [(Int, PositionSet)]] = [:]
    /// Positions 0..<n: where one more scalar can be consumed.
    let consumable: PositionSet

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
        var all = PositionSet(bitCount: scalars.count + 1)
        for p in 0..<scalars.count { all.insert(p) }
        consumable = all
    }

    var count: Int { scalars.count }

    private var foldedScalars: [Unicode.Scalar] {
        if let folded { return folded }
        let f = scalars.map(CaseFolding.fold)
        folded = f
        return f
    }

    /// Positions p where scalar p equals `literal` (after folding both when case-insensitive).
    func literalMask(_ literal: Unicode.Scalar, caseInsensitive: Bool) -> PositionSet {
        let key = caseInsensitive ? CaseFolding.fold(literal) : literal
        if let m = caseInsensitive ? foldedMasks[key.value] : exactMasks[key.value] { return m }
        let source = caseInsensitive ? foldedScalars : scalars
        var m = PositionSet(bitCount: count + 1)
        for (p, s) in source.enumerated() where s == key { m.insert(p) }
        if caseInsensitive { foldedMasks[key.value] = m } else { exactMasks[key.value] = m }
        return m
    }

    /// Positions p where scalar p is in a single-character built-in class.
    func classMask(_ variable: BuiltInVariable, caseInsensitive: Bool) -> PositionSet {
        let key = "\(variable.rawValue)/\(caseInsensitive)"
        if let m = classMasks[key] { return m }
        var m = PositionSet(bitCount: count + 1)
        for (p, s) in scalars.enumerated() {
            let hit =
                variable.contains(s)
                || (caseInsensitive && (variable.contains(CaseFolding.fold(s)) || variable.contains(CaseFolding.upper(s))))
            if hit { m.insert(p) }
        }
        classMasks[key] = m
        return m
    }

    /// For a string-valued built-in (`region`, `lang`): per code length L, the positions p where
    /// the L scalars from p are one of the codes.
    func codeMasks(_ variable: BuiltInVariable, caseInsensitive: Bool) -> [(Int, PositionSet)] {
        let key = "\(variable.rawValue)/\(caseInsensitive)"
        if let m = setMasks[key] { return m }
        let codes = CodeSets.codes(variable, caseInsensitive: caseInsensitive)
        let source = caseInsensitive ? foldedScalars : scalars
        var out: [(Int, PositionSet)] = []
        for length in codes.lengths {
            var m = PositionSet(bitCount: count + 1)
            if source.count >= length {
                for p in 0...(source.count - length) {
                    var s = String.UnicodeScalarView()
                    s.append(contentsOf: source[p..<(p + length)])
                    if codes.values.contains(String(s)) { m.insert(p) }
                }
            }
            out.append((length, m))
        }
        setMasks[key] = out
        return out
    }
}

/// The code lists of `$(region)` and `$(lang)` as sets, exact and case-folded.
enum CodeSets {
    struct Codes {
        let values: Set<String>
        let lengths: [Int]
    }

    static let regions = make(ISOCodes.regions)
    static let regionsFolded = make(ISOCodes.regions.map { $0.lowercased() })
    static let languages = make(ISOCodes.languages)
    static let languagesFolded = make(ISOCodes.languages.map { $0.lowercased() })

    private static func make(_ list: [String]) -> Codes {
        Codes(values: Set(list), lengths: Array(Set(list.map { $0.unicodeScalars.count })).sorted())
    }

    static func codes(_ variable: BuiltInVariable, caseInsensitive: Bool) -> Codes {
        switch (variable, caseInsensitive) {
        case (.region, false): regions
        case (.region, true): regionsFolded
        case (.lang, false): languages
        default: languagesFolded
        }
    }
}

/// Simple, length-preserving case folding: one scalar to one scalar, so folding never changes
/// what `?` counts (spec §1.8).
enum CaseFolding {
    static func fold(_ s: Unicode.Scalar) -> Unicode.Scalar {
        if s.value < 0x80 {
            return (0x41...0x5A).contains(s.value) ? Unicode.Scalar(s.value + 0x20)! : s
        }
        let lower = s.properties.lowercaseMapping.unicodeScalars
        return lower.count == 1 ? lower.first! : s
    }

    static func upper(_ s: Unicode.Scalar) -> Unicode.Scalar {
        if s.value < 0x80 {
            return (0x61...0x7A).contains(s.value) ? Unicode.Scalar(s.value - 0x20)! : s
        }
        let up = s.properties.uppercaseMapping.unicodeScalars
        return up.count == 1 ? up.first! : s
    }
}

/// Runs patterns over subjects. Each token maps the set of reachable positions to the next one:
/// a literal keeps the positions where it stands and moves them on by one, `?` moves every
/// position on by one, `*` reaches everything from the lowest position to the end, and a variable
/// is the union of its values. The pattern matches when the end of the subject is reachable.
struct PatternEngine {
    /// Work allowed for one URL, in 64-bit word operations. Enough for any real file (a 128 KB file
    /// of `*a*a*a…` patterns against an 8 KB path needs about 10 million); it stops a file whose
    /// variables multiply the work from holding a CPU.
    static let defaultBudget = 400_000_000

    /// Custom variables: name → compiled values. They replace built-ins of the same name.
    let variables: [String: [Pattern]]
    var budget: Int

    init(variables: [String: [Pattern]], budget: Int = defaultBudget) {
        self.variables = variables
        self.budget = budget
    }

    mutating func matches(_ pattern: Pattern, _ subject: Subject, caseInsensitive: Bool, at path: JSONPath) throws(MatchError) -> Bool {
        let end = try run(pattern.tokens, from: .start(length: subject.count), subject, caseInsensitive, path)
        return end.contains(subject.count)
    }

    private mutating func run(
        _ tokens: [Pattern.Token], from start: PositionSet, _ subject: Subject, _ ci: Bool, _ path: JSONPath
    ) throws(MatchError) -> PositionSet {
        var reach = start
        for token in tokens {
            if reach.isEmpty { return reach }
            budget -= reach.wordCount + 1
            if budget < 0 { throw .tooComplex(path) }
            switch token {
            case .literal(let c):
                reach = reach.intersection(subject.literalMask(c, caseInsensitive: ci)).shifted(by: 1)
            case .anyCharacter:
                reach = reach.intersection(subject.consumable).shifted(by: 1)
            case .anyRun:
                reach = reach.fillingFromLowest()
            case .variable(let name):
                if let values = variables[name] {
                    var out = PositionSet(bitCount: reach.bitCount)
                    for value in values {
                        out.formUnion(try run(value.tokens, from: reach, subject, ci, path))
                    }
                    reach = out
                } else if let builtIn = BuiltInVariable(rawValue: name) {
                    if builtIn.codes != nil {
                        var out = PositionSet(bitCount: reach.bitCount)
                        for (length, mask) in subject.codeMasks(builtIn, caseInsensitive: ci) {
                            out.formUnion(reach.intersection(mask).shifted(by: length))
                        }
                        reach = out
                    } else {
                        reach = reach.intersection(subject.classMask(builtIn, caseInsensitive: ci)).shifted(by: 1)
                    }
                } else {
                    // An undefined variable never matches (spec §1.9); the validator refuses it.
                    reach = PositionSet(bitCount: reach.bitCount)
                }
            }
        }
        return reach
    }
}
