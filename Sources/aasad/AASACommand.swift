import ArgumentParser
import Daemon

/// The `aasad` binary: serves, validates and explains apple-app-site-association files.
struct AASACommand: ParsableCommand {
    static let version = Daemon.version

    static let configuration = CommandConfiguration(
        commandName: "aasad",
        abstract: "Serve, validate and explain apple-app-site-association and assetlinks.json files.",
        discussion: """
            Exit status: 0 when everything checked is valid, 1 when a file is invalid or a URL cannot \
            be evaluated, 64 for bad arguments.
            """,
        version: version,
        subcommands: [ServeCommand.self, ValidateCommand.self, MatchCommand.self, SitesCommand.self, CheckCommand.self, SiteCommand.self]
    )
}

#if !FUZZ_CONFIG
    /// The entry point. The fuzzing build (scripts/fuzz.sh `config`) leaves it out: libFuzzer
    /// provides `main` there, and FuzzEntry.swift the function it calls.
    @main
    enum Main {
        static func main() {
            // `serve` prints its own help (its flags come from the settings schema, not from
            // declared options), so ArgumentParser's `help serve` is answered as `serve --help`.
            var arguments = Array(CommandLine.arguments.dropFirst())
            if arguments.count >= 2, arguments[0] == "help", arguments[1] == "serve" {
                arguments = ["serve", "--help"] + arguments.dropFirst(2)
            }
            // `site` answers bad arguments with 2, as its discussion says (ArgumentParser's 64
            // elsewhere).
            if arguments.first == "site" { SiteCommand.main(arguments) }
            AASACommand.main(arguments)
        }
    }
#endif

extension OutputFormat: ExpressibleByArgument {}
