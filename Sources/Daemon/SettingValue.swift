import Reactor

/// The parsers of `SettingsSchema`'s entries: text to a typed value (with the message a refused
/// value gets, the same for the file, a variable and a flag) and back (for defaults in help).
/// Why a value was refused: the message after the key.
package struct Refusal: Error, Equatable {
    package let message: String
    init(_ message: String) { self.message = message }
}

/// How a setting's text becomes its value, and back.
package struct SettingValue<V: Sendable>: Sendable {
    var isList = false
    /// The values a choice takes, for the flag's help.
    var listedValues: [String]? = nil
    let parse: @Sendable ([String]) -> Result<V, Refusal>
    let show: @Sendable (V) -> String

    /// One textual value.
    static func scalar(_ parse: @escaping @Sendable (String) -> Result<V, Refusal>, show: @escaping @Sendable (V) -> String)
        -> SettingValue
    {
        SettingValue(parse: { parse($0[0]) }, show: show)
    }
}

extension SettingValue where V == Int64 {
    /// Whole seconds within `bounds`.
    static func seconds(_ bounds: ClosedRange<Int64>) -> SettingValue {
        .scalar(
            { text in
                guard let n = Int64(text), bounds.contains(n) else {
                    return .failure(Refusal("must be whole seconds from \(bounds.lowerBound) to \(bounds.upperBound), not \"\(text)\""))
                }
                return .success(n)
            }, show: { "\($0)" })
    }
}

extension SettingValue where V == Int64? {
    /// Whole seconds within `bounds`, or `off` (nil).
    static func secondsOrOff(_ bounds: ClosedRange<Int64>) -> SettingValue {
        .scalar(
            { text in
                if text == "off" { return .success(nil) }
                guard let n = Int64(text), bounds.contains(n) else {
                    return .failure(
                        Refusal("must be whole seconds from \(bounds.lowerBound) to \(bounds.upperBound), or off, not \"\(text)\""))
                }
                return .success(n)
            }, show: { $0.map { "\($0)" } ?? "off" })
    }
}

extension SettingValue where V == Int {
    /// A count within `bounds`: "must be a number of `unit` from … to …".
    static func count(_ bounds: ClosedRange<Int>, _ unit: String, message: String? = nil) -> SettingValue {
        .scalar(
            { text in
                guard let n = Int(text), bounds.contains(n) else {
                    let what = message ?? "a number of \(unit) from \(bounds.lowerBound) to \(bounds.upperBound)"
                    return .failure(Refusal("must be \(what), not \"\(text)\""))
                }
                return .success(n)
            }, show: { "\($0)" })
    }
}

extension SettingValue where V == Bool {
    static var bool: SettingValue {
        .scalar(
            { text in
                switch text.lowercased() {
                case "true", "yes", "on", "1": .success(true)
                case "false", "no", "off", "0": .success(false)
                default: .failure(Refusal("must be true or false, not \"\(text)\""))
                }
            }, show: { $0 ? "on" : "off" })
    }
}

extension SettingValue where V: RawRepresentable & CaseIterable, V.RawValue == String {
    /// One of an enum's raw values.
    static func choice(listed: Bool = false) -> SettingValue {
        var value = SettingValue.scalar(
            { text in
                guard let value = V(rawValue: text) else {
                    return .failure(
                        Refusal("must be one of \(V.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), not \"\(text)\""))
                }
                return .success(value)
            }, show: { $0.rawValue })
        if listed { value.listedValues = V.allCases.map(\.rawValue) }
        return value
    }
}

extension SettingValue where V == [String] {
    /// Addresses to listen on, one or a list.
    static var addresses: SettingValue {
        SettingValue(
            isList: true,
            parse: { values in
                for value in values {
                    if let problem = SettingsSchema.addressProblem(value) { return .failure(Refusal(problem)) }
                }
                return .success(values)
            }, show: { $0.isEmpty ? "none" : $0.joined(separator: ",") })
    }

    /// A list checked whole by `check`.
    static func list(_ check: @escaping @Sendable ([String]) -> Result<[String], Refusal>) -> SettingValue {
        SettingValue(isList: true, parse: check, show: { $0.isEmpty ? "none" : $0.joined(separator: ",") })
    }
}

extension SettingValue where V == String {
    /// Text `check` accepts (nil: accepted).
    static func text(_ check: @escaping @Sendable (String) -> String?) -> SettingValue {
        .scalar({ text in check(text).map { .failure(Refusal($0)) } ?? .success(text) }, show: { $0 })
    }
}

extension SettingValue where V == String? {
    /// Optional text `check` accepts; `off` is nil when `offIsNone`.
    static func optionalText(offIsNone: Bool = false, _ check: @escaping @Sendable (String) -> String?) -> SettingValue {
        .scalar(
            { text in
                if offIsNone && text == "off" { return .success(nil) }
                return check(text).map { .failure(Refusal($0)) } ?? .success(text)
            }, show: { $0 ?? (offIsNone ? "off" : "none") })
    }

    /// A file or directory path: not empty, no control bytes.
    static var path: SettingValue { .optionalText(SettingsSchema.pathProblem) }
}
