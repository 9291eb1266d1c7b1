import AASA
import ACME
import ArgumentParser
import Check
import Daemon
import Foundation
import Outbound
import SiteStore
import TLS

/// `aasad sites`: every site of a config directory with its state, as `serve` would load it.
struct SitesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sites",
        abstract: "List the sites of a config directory: hosts, state, ETag and problems.",
        discussion: """
            States: serving (every file valid), refused (nothing valid to serve), and names refused \
            to a site (another site holds them: who and why). A running server also has \
            serving-last-good, for a site whose new file is invalid. Exit status 0 when every site \
            is served without problems, 1 otherwise.
            """
    )

    @Option(help: "The config directory (environment: AASAD_CONFIG).")
    var config: String = ProcessInfo.processInfo.environment["AASAD_CONFIG"] ?? "config"

    @Option(help: "Output format: text for people, json for scripts.")
    var format: OutputFormat = .text

    @Flag(help: "Also ask Apple's CDN for each site's copy now and compare it with the site's file (one request at a time).")
    var cdn = false

    @Option(name: .customLong("cdn-url"), help: "The CDN base URL with --cdn (default: cdn-watch.url of aasad.yaml, else Apple's).")
    var cdnURL: String?

    @Option(name: .customLong("cacert"), help: "Extra trusted roots for the CDN's HTTPS, with --cdn.")
    var caFile: String?

    @Option(name: .customLong("connect-to"), help: ArgumentHelp("With --cdn: curl's HOST1:PORT1:HOST2:PORT2.", valueName: "entry"))
    var connectTo: [String] = []

    func validate() throws {
        if !cdn && (cdnURL != nil || caFile != nil || !connectTo.isEmpty) {
            throw ValidationError("--cdn-url, --cacert and --connect-to apply to --cdn; add --cdn.")
        }
        if let cdnURL, let problem = CDNWatchSettings.urlProblem(cdnURL) { throw ValidationError("--cdn-url \(problem)") }
    }

    func run() throws {
        let registry = ConfigLoading.sitesRegistry(config: config)
        let statuses = registry.statuses
        let problems = registry.entryErrors
        let automatic = StoredCertificates.read(config: config, snapshot: registry.snapshot)
        let copies = cdn ? try cdnStates(registry.snapshot) : [:]
        // Names added over the tenant API wait for their ownership check (docs/api.md).
        let checks = Daemon.verificationStates(config: config)
        func unverified(_ hosts: [String]) -> [String] { hosts.filter { checks[$0] == false } }
        switch format {
        case .json:
            JSONOutput.print(
                Listing(
                    sites: statuses.map {
                        Site(
                            status: $0, acme: automatic?.forSite($0.hosts), cdn: cdn ? copies[$0.directory] : nil,
                            unverified: checks.isEmpty ? nil : unverified($0.hosts))
                    },
                    entries: problems.map { "\($0.file): \($0.message)" }))
        case .text:
            // Fields apart by tabs, each escaped (`TerminalText`): a directory's name and what
            // its files say are the tenant's, and must neither move the columns nor start a line.
            for s in statuses {
                var fields = [s.directory, s.state.rawValue, s.hosts.joined(separator: ",")]
                if let etag = s.etag { fields.append("etag=\(etag)") }
                if !s.refusedHosts.isEmpty { fields.append("refused=\(s.refusedHosts.map(\.host).joined(separator: ","))") }
                if !unverified(s.hosts).isEmpty { fields.append("unverified=\(unverified(s.hosts).joined(separator: ","))") }
                if cdn { fields.append("cdn=" + (copies[s.directory].map { "\($0.state.rawValue)(\($0.host))" } ?? "none")) }
                for stored in automatic?.forSite(s.hosts) ?? [] {
                    fields.append(
                        "acme:\(stored.name)="
                            + (stored.capped == true ? "capped " : "")
                            + (stored.notAfter.map { "until " + ConfigLoading.date($0) } ?? stored.problem ?? "none yet"))
                }
                print(fields.map(TerminalText.escaped).joined(separator: "\t"))
                for e in s.errors { print("  error: \(TerminalText.escaped(e))") }
                for r in s.refusedHosts {
                    print(TerminalText.escaped("  refused: \(r.host): " + (r.heldBy.map { "held by \($0): " } ?? "") + r.reason))
                }
            }
            for p in problems { print(TerminalText.escaped("error: \(p.file): \(p.message)")) }
        }
        let clean = statuses.allSatisfy { $0.state == .serving && $0.refusedHosts.isEmpty } && problems.isEmpty
        if !clean { throw ExitCode(1) }
    }

    struct Listing: Encodable {
        var sites: [Site]
        var entries: [String]
    }

    /// A site's status, with its automatic certificates as the storage holds them and, with
    /// `--cdn`, Apple's CDN copy of its worst host.
    struct Site: Encodable {
        var status: SiteStatus
        var acme: [StoredCertificate]?
        var cdn: CDNWatchSchedule.HostState?
        /// The site's names added over the tenant API whose ownership check has not passed (no
        /// certificate is ordered for them); nil when no name has a check.
        var unverified: [String]?

        enum Key: String, CodingKey { case acme, cdn, unverified }

        func encode(to encoder: any Encoder) throws {
            try status.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(acme, forKey: .acme)
            try container.encodeIfPresent(cdn, forKey: .cdn)
            try container.encodeIfPresent(unverified, forKey: .unverified)
        }
    }

    /// Every served site's Apple CDN copy, looked at once (SitesCDNLook, in Daemon).
    func cdnStates(_ snapshot: Snapshot) throws -> [String: CDNWatchSchedule.HostState] {
        let (settings, problems) = ServerSettings.load(configDirectory: config)
        for problem in problems { FileHandle.standardError.write(Data("warning: \(problem); using the default\n".utf8)) }
        do {
            return try SitesCDNLook(settings: settings.cdnWatch, base: cdnURL, caFile: caFile, connectTo: connectTo).states(of: snapshot)
        } catch {
            FileHandle.standardError.write(Data("error: the HTTPS client cannot start: \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
