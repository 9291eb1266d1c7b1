import ArgumentParser
import Foundation
import Logging
import SiteStore

/// `aasad sites`: every site of a config directory with its state, as `serve` would load it.
struct SitesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sites",
        abstract: "List the sites of a config directory: hosts, state, ETag and problems.",
        discussion: """
            States: serving (every file valid), refused (nothing valid to serve), and hosts in \
            conflict (claimed by two sites: served by neither). A running server also has \
            serving-last-good, for a site whose new file is invalid. Exit status 0 when every site \
            is served without problems, 1 otherwise.
            """
    )

    @Option(help: "The config directory (environment: AASAD_CONFIG).")
    var config: String = ProcessInfo.processInfo.environment["AASAD_CONFIG"] ?? "config"

    @Option(help: "Output format: text for people, json for scripts.")
    var format: OutputFormat = .text

    func run() throws {
        var logger = Logger(label: "aasad", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        let registry = SiteRegistry(root: config, logger: logger, checkCertificate: ConfigLoading.check)
        registry.reloadAll()
        let statuses = registry.statuses
        let problems = registry.entryErrors
        switch format {
        case .json:
            JSONOutput.print(Listing(sites: statuses, entries: problems.map { "\($0.file): \($0.message)" }))
        case .text:
            for s in statuses {
                var line = "\(s.directory)\t\(s.state.rawValue)\t\(s.hosts.joined(separator: ","))"
                if let etag = s.etag { line += "\tetag=\(etag)" }
                if !s.conflictingHosts.isEmpty { line += "\tconflict=\(s.conflictingHosts.joined(separator: ","))" }
                print(line)
                for e in s.errors { print("  error: \(e)") }
            }
            for p in problems { print("error: \(p.file): \(p.message)") }
        }
        let clean = statuses.allSatisfy { $0.state == .serving && $0.conflictingHosts.isEmpty } && problems.isEmpty
        if !clean { throw ExitCode(1) }
    }

    struct Listing: Encodable {
        var sites: [SiteStatus]
        var entries: [String]
    }
}
