import Daemon

/// `serve`'s settings flags, read from the settings table (`SettingsSchema.all`): each setting
/// with a `flag` is `--flag VALUE` (repeatable for a list) or `--flag/--no-flag` for a switch.
/// ArgumentParser cannot declare options from data, so serve hands it every argument but
/// `--config` and reads them here, with its messages and its help layout.
enum ServeFlags {
    /// One flag as given: the setting and its values (a list's in order; a scalar's last).
    struct Value {
        var name: String
        var setting: Setting
        var values: [String]
    }

    struct Failure: Error {
        var message: String
    }

    /// The flags in `arguments`, in the table's order (the order they apply in, whatever the
    /// command line's).
    static func parse(_ arguments: [String]) throws(Failure) -> [Value] {
        var found: [String: Value] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw Failure(message: "Unexpected argument '\(argument)'")
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
            guard let setting else { throw Failure(message: "Unknown option '--\(name)'") }
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

    // MARK: - Help

    /// The width ArgumentParser lays help out in when the output is not a terminal.
    static let columns = 80
    /// Where a flag's description starts.
    static let descriptionColumn = 26

    /// `serve --help`, laid out as ArgumentParser lays out every other command's.
    static func help(discussion: String) -> String {
        var lines: [String] = []
        lines += wrap("OVERVIEW: " + ServeCommand.configuration.abstract, width: columns, indent: 0)
        lines.append("")
        lines += wrap(discussion, width: columns, indent: 0)
        lines += ["", "USAGE: aasad serve <options>", "", "OPTIONS:"]
        lines += entry("--config <config>", ServeCommand.configHelp + " (default: config)")
        for setting in SettingsSchema.flags {
            guard let flag = setting.flag else { continue }
            let label = setting.isSwitch ? "--\(flag)/--no-\(flag)" : "--\(flag) <\(flag)>"
            var text = setting.help
            if setting.isList {
                text += " (repeatable; default \(setting.shownDefault ?? "none"))."
            } else {
                text += setting.shownDefault.map { " (default: \($0))." } ?? "."
            }
            if let values = setting.flagValues { text += " (values: \(values.joined(separator: ", ")))" }
            lines += entry(label, text)
        }
        lines += entry("--version", "Show the version.")
        lines += entry("-h, --help", "Show help information.")
        return lines.joined(separator: "\n") + "\n\n"
    }

    /// A label and its description: on one line when the label leaves room, else below it.
    private static func entry(_ label: String, _ text: String) -> [String] {
        let pad = String(repeating: " ", count: descriptionColumn)
        var body = wrap(text, width: columns - descriptionColumn, indent: 0).map { pad + $0 }
        let head = "  " + label
        if head.count + 1 <= descriptionColumn, !body.isEmpty {
            body[0] = head + String(repeating: " ", count: descriptionColumn - head.count) + body[0].dropFirst(descriptionColumn)
            return body
        }
        return [head] + body
    }

    /// Text broken at spaces into lines of fewer than `width` characters (the last may fill it),
    /// as ArgumentParser breaks help text.
    private static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            let chunk = rest.prefix(width)
            if chunk.endIndex == rest.endIndex {
                lines.append(String(rest))
                break
            }
            guard let space = chunk.lastIndex(of: " ") ?? rest.firstIndex(of: " ") else {
                lines.append(String(rest))
                break
            }
            lines.append(String(rest[..<space]))
            rest = rest[rest.index(after: space)...]
        }
        return lines
    }
}
