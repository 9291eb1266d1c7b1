import AASA
import ArgumentParser
import Daemon
import Foundation
import Logging

/// `aasad serve`: the daemon (`Daemon`), its settings flags and its signals.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the config directory's sites over HTTPS (and optionally plain HTTP).",
        discussion: """
            Each site answers /.well-known/apple-app-site-association, /apple-app-site-association \
            and /.well-known/assetlinks.json. Without any certificate in the config directory, a \
            development CA and certificate for the configured hosts are made in the state directory. \
            SIGHUP reloads the config directory (and reopens the access log); SIGUSR2 starts the \
            binary at the same path with the listening sockets, and once it is ready this process \
            drains and exits (an in-place upgrade); SIGTERM and SIGINT stop after open connections \
            finish. Settings come from the config directory's \
            aasad.yaml, then AASAD_* environment variables (AASAD_TIMEOUTS_IDLE for timeouts.idle), \
            then these flags, each overriding the one before.
            """,
        // The settings' flags come from the schema (`SettingsFlags`); `ServeFlags` prints the help.
        helpNames: []
    )

    /// `--config`'s help, shown by `ServeFlags.help`.
    static let configHelp = "The config directory (environment: AASAD_CONFIG)."

    @Option(help: ArgumentHelp(configHelp))
    var config: String = ProcessInfo.processInfo.environment["AASAD_CONFIG"] ?? "config"

    /// Every other argument: the settings' flags (`SettingsSchema`), read by `SettingsFlags`.
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var settingFlags: [String] = []

    func run() throws {
        if settingFlags.contains(where: { $0 == "--help" || $0 == "-h" }) {
            FileHandle.standardOutput.write(Data(ServeFlags.help(discussion: Self.configuration.discussion).utf8))
            return
        }
        let flags: [SettingsFlags.Value]
        do {
            flags = try SettingsFlags.parse(settingFlags)
        } catch {
            throw ValidationError(error.message)
        }
        // Taken before anything can fail: an exit before readiness is the upgrade's failure.
        let environment = ProcessInfo.processInfo.environment
        let upgradeReadiness = Upgrade.takeReadiness(environment: environment)
        // aasad.yaml, then AASAD_* variables, then these flags (at start, and again whenever
        // aasad.yaml changes: `SettingsFollower`).
        let (settings, problems, unknownVariables) = ServerSettings.resolve(configDirectory: config, environment: environment, flags: flags)
        if let problem = problems.first(where: { $0.source == "flag" }) {
            throw ValidationError("\(problem.key): \(problem.escapedMessage).")
        }
        guard problems.isEmpty else {
            for problem in problems { printError("error: \(problem)") }
            printError(
                "aasad: the settings are not valid; nothing was started (check them with: aasad validate \(TerminalText.escaped(config)))")
            throw ExitCode(1)
        }
        LogControl.shared.set(level: settings.logLevel.level, json: settings.logFormat == .json)
        LoggingSystem.bootstrap { label in SwitchingLogHandler(label: label) }
        let logger = Logger(label: "aasad")
        for name in unknownVariables {
            logger.warning(
                "\(name) is not a setting; ignored", metadata: ["settings": "\(ServerSettings.environmentNames.joined(separator: " "))"])
        }
        // Signals are taken by sigwait on this thread only; workers inherit the blocked mask.
        let signals = Daemon.blockSignals()
        let config = config
        let daemon = Daemon(
            configDirectory: config, settings: settings, logger: logger, upgradeReadiness: upgradeReadiness, environment: environment,
            reread: { ServerSettings.resolve(configDirectory: config, environment: ProcessInfo.processInfo.environment, flags: flags) })
        do {
            try daemon.start()
        } catch {
            throw ExitCode(1)
        }
        daemon.runUntilSignalled(signals)
    }
}

/// Writes a line to standard error at once.
private func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
