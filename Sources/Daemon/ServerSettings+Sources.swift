package import Foundation

extension ServerSettings {
    /// The settings as `serve` reads them: the config directory's aasad.yaml, then `AASAD_*`
    /// variables, then serve's flags, each overriding the one before; then the checks across
    /// keys. At start, and again whenever aasad.yaml changes (`SettingsFollower`). `unknown`: the
    /// `AASAD_*` variables that are not settings (warned about, not refused).
    package static func resolve(
        configDirectory: String, environment: [String: String], flags: [SettingsFlags.Value]
    ) -> (ServerSettings, [Problem], unknown: [String]) {
        var (settings, problems) = load(configDirectory: configDirectory)
        let fromEnvironment = settings.apply(environment: environment)
        problems += fromEnvironment.problems
        for flag in flags {
            if let problem = settings.apply(flag: "--" + flag.name, setting: flag.setting, flag.values) { problems.append(problem) }
        }
        if problems.isEmpty { problems += settings.consistencyProblems(source: "settings") }
        return (settings, problems, fromEnvironment.unknown)
    }
}
