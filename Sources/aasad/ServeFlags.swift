import Daemon

/// `serve --help` for the settings' flags (`SettingsFlags` reads them): ArgumentParser cannot
/// declare options from data, so serve lays out its help here as ArgumentParser lays out every
/// other command's.
enum ServeFlags {
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
