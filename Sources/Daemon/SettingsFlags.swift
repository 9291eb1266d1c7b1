import AASA

/// `serve`'s settings flags, read from the settings table (`SettingsSchema.all`): each setting
/// with a `flag` is `--flag VALUE` (repeatable for a list; a scalar's last wins) or
/// `--flag/--no-flag` for a switch, with ArgumentParser's messages for what is malformed (what
/// they quote from the command line escaped, `TerminalText`: an unknown option's ESC or line feed
/// must not reach the terminal raw). The values are checked by the setting itself when applied
/// (`ServerSettings.apply(flag:)`).
package enum SettingsFlags {
    /// One flag as given: the setting and its values (a list's in order; a scalar's last).
    package struct Value {
        package var name: String
        package var setting: Setting
        package var values: [String]
    }

    package struct Failure: Error {
        package var message: String
    }

    /// The flags in `arguments`, in the table's order (the order they apply in, whatever the
    /// command line's).
    package static func parse(_ arguments: [String]) throws(Failure) -> [Value] {
        var found: [String: Value] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw Failure(message: "Unexpected argument '\(TerminalText.escaped(argument))'")
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            var switchedOff = false
            var setting = SettingsSchema.flags.first { $0.flag == name }
            if setting == nil, name.hasPrefix("no-"), let on = SettingsSchema.flags.first(where: { $0.flag == String(name.dropFirst(3)) }),
                on.isSwitch
            {
                setting = on
                switchedOff = true
                name = String(name.dropFirst(3))
            }
            guard let setting else { throw Failure(message: "Unknown option '--\(TerminalText.escaped(name))'") }
            if setting.isSwitch {
                if inline != nil { throw Failure(message: "The option '--\(name)' does not take a value") }
                found[setting.path] = Value(name: name, setting: setting, values: [switchedOff ? "false" : "true"])
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else if index < arguments.count, !(arguments[index].hasPrefix("-") && arguments[index].count > 1) {
                value = arguments[index]
                index += 1
            } else {
                throw Failure(message: "Missing value for '--\(name) <\(name)>'")
            }
            var entry = found[setting.path] ?? Value(name: name, setting: setting, values: [])
            entry.values = setting.isList ? entry.values + [value] : [value]
            found[setting.path] = entry
        }
        return SettingsSchema.flags.compactMap { found[$0.path] }
    }
}
