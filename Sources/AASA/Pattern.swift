/// A URL pattern as Apple's matcher reads it (spec §1.7, §1.9): literal characters, `*` (any run,
/// `/` included), `?` (exactly one character) and `$(name)` (one of a variable's values).
/// There is no escape and no bracket class: every other character is literal.
public struct Pattern: Sendable, Equatable {
    public enum Token: Sendable, Equatable {
        case literal(Unicode.Scalar)
        case anyCharacter
        case anyRun
        case variable(String)
    }

    public var source: String
    public var tokens: [Token]
    /// True when a `$(` has no closing `)`: the characters are then taken literally.
    public var hasUnterminatedVariable: Bool

    /// Splits a pattern into tokens. `allowVariables` is false for variable values, which may use
    /// `*` and `?` but not other variables (spec §1.9).
    public init(_ source: String, allowVariables: Bool = true) {
        self.source = source
        var tokens: [Token] = []
        var unterminated = false
        let scalars = Array(source.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            switch s {
            case "*":
                // Consecutive stars mean the same as one; collapsing them keeps matching linear.
                if tokens.last != .anyRun { tokens.append(.anyRun) }
                i += 1
            case "?":
                tokens.append(.anyCharacter)
                i += 1
            case "$" where allowVariables && i + 1 < scalars.count && scalars[i + 1] == "(":
                var j = i + 2
                var name = String.UnicodeScalarView()
                var closed = false
                while j < scalars.count {
                    let c = scalars[j]
                    if c == ")" {
                        closed = true
                        break
                    }
                    if c == "$" || c == "(" { break }
                    name.append(c)
                    j += 1
                }
                if closed {
                    tokens.append(.variable(String(name)))
                    i = j + 1
                } else {
                    unterminated = true
                    tokens.append(.literal(s))
                    i += 1
                }
            default:
                tokens.append(.literal(s))
                i += 1
            }
        }
        self.tokens = tokens
        self.hasUnterminatedVariable = unterminated
    }

    /// The variable names the pattern refers to, in order of first use.
    public var variableNames: [String] {
        var seen = Set<String>()
        var names: [String] = []
        for case .variable(let name) in tokens where seen.insert(name).inserted {
            names.append(name)
        }
        return names
    }
}
