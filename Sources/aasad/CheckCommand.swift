import AASA
import ArgumentParser
import Check
import Daemon
import Foundation
import Outbound
import SiteStore

/// `aasad check HOST...`: deployed domains as Apple's fetcher sees them.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check deployed domains as Apple's fetcher sees them, and what Apple's CDN holds.",
        discussion: """
            For each host: the origin's /.well-known/apple-app-site-association over verified TLS \
            (no redirect followed, asked as AASA-Bot), its status, Content-Type, size, validity and \
            certificate; /.well-known/assetlinks.json when there is one; and Apple's CDN copy \
            (current, stale, missing or error), compared with the origin's file as JSON; and, for a \
            host with an assetlinks.json, what Google's Digital Asset Links API lists for it \
            (current, stale, missing or error), compared with the file's apps and fingerprints. Each \
            problem comes with a code and a fix. --entitlements reads the hosts (and the services \
            each needs) from an app's entitlements; developer- and managed-mode entries skip the \
            CDN, which those devices bypass. Exit status 0 when every host is ok, 1 otherwise; a CDN \
            or API that cannot be reached is an error (cdn-error, dal-error): on a machine without \
            access to them, give --cdn none and --dal none.
            """
    )

    @Option(name: .customLong("cacert"), help: "Extra trusted roots (PEM), added to the system's: a staging CA.")
    var caFile: String?

    @Option(help: "Apple's CDN base URL; the host is appended. 'none' skips the CDN.")
    var cdn: String = HostChecker.appleCDN

    @Option(
        name: .customLong("connect-to"),
        help: ArgumentHelp(
            "Connect to HOST2:PORT2 for requests to HOST1:PORT1 (curl's syntax), e.g. to check a staging address.",
            valueName: "host1:port1:host2:port2"))
    var connectTo: [String] = []

    @Option(name: .customLong("cdn-connect-to"), help: .hidden)
    var cdnConnectTo: [String] = []

    @Option(help: "Google's Digital Asset Links API (statements:list) URL. 'none' skips it.")
    var dal: String = DALProbe.google

    @Option(
        name: .customLong("dal-key"),
        help: ArgumentHelp(
            "A Google API key for the Digital Asset Links API, sent as key=; or set \(Self.dalKeyVariable). Never printed.",
            valueName: "key"))
    var dalKey: String?

    /// The environment variable the key may come from instead (a command line is visible to
    /// every user of the machine in `ps`).
    static let dalKeyVariable = "AASAD_DAL_KEY"

    /// The key given: `--dal-key`, else the variable when set and not empty.
    var givenDALKey: String? {
        dalKey ?? ProcessInfo.processInfo.environment[Self.dalKeyVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    @Option(name: .customLong("dal-connect-to"), help: .hidden)
    var dalConnectTo: [String] = []

    @Option(help: ArgumentHelp("Also check that this app is in each host's file, and which paths it gets.", valueName: "teamid.bundle.id"))
    var app: String?

    @Option(help: ArgumentHelp("An app's entitlements plist: check every associated domain in it.", valueName: "file"))
    var entitlements: String?

    @Option(help: "Seconds a request may take in all.")
    var timeout: Int = 20

    @Option(help: "Output format: text for people, json for scripts.")
    var format: OutputFormat = .text

    @Argument(help: "Host names to check (no scheme, path or port).")
    var hosts: [String] = []

    func validate() throws {
        if hosts.isEmpty && entitlements == nil {
            throw ValidationError("Name at least one host, e.g. 'aasad check example.com', or give --entitlements App.entitlements.")
        }
        for host in hosts where !Entitlements.isHostName(Entitlements.fetchedHost(host)) {
            throw ValidationError(
                "'\(TerminalText.escaped(host))' is not a host name: give the name alone in A-label form, e.g. example.com (use --connect-to for another address or port)."
            )
        }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--cacert: cannot read \(TerminalText.escaped(caFile))")
        }
        if let app, let problem = AppIdentifier.problem(with: app) {
            throw ValidationError("--app: \(problem)")
        }
        if cdn != "none", let problem = CDNWatchSettings.urlProblem(cdn) {
            throw ValidationError("--cdn \(problem), or none.")
        }
        if dal != "none", let problem = DALProbe.urlProblem(dal) {
            throw ValidationError("--dal \(problem), or none.")
        }
        if let key = givenDALKey, let problem = DALProbe.keyProblem(key) {
            throw ValidationError("\(dalKey == nil ? Self.dalKeyVariable : "--dal-key") \(problem).")
        }
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout takes 1 to 300 seconds.") }
    }

    /// Says what is wrong on standard error and exits 1 (a file that cannot be used, as
    /// `validate` does; 64 is for bad arguments).
    static func fail(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(TerminalText.escaped(message))\n".utf8))
        return ExitCode(1)
    }

    func run() throws {
        var entitlementProblems: [Problem] = []
        var domains: [Entitlements.Domain] = []
        var apps = app.map { [$0] } ?? []
        if let entitlements {
            let read: Entitlements
            do {
                // Bounded, and refused unless a regular file (a FIFO would block, /dev/zero fill memory).
                read = try Entitlements(bytes: ConfigLoader.readBounded(path: entitlements, limit: Entitlements.maximumFileSize).get())
            } catch let error as Entitlements.ReadError {
                throw Self.fail("\(entitlements): \(error.description)")
            } catch {
                throw Self.fail("\(entitlements): cannot read the file: \(error)")
            }
            entitlementProblems = read.problems
            if apps.isEmpty, let identifier = read.applicationIdentifier { apps = [identifier] }
            domains = read.domains
        }
        let targets = CheckTarget.list(hosts: hosts, domains: domains)
        let configuration = CDNProbe.configuration(
            caFile: caFile, userAgent: "aasad-check/\(AASACommand.version)", timeoutSeconds: timeout)
        let client: OutboundClient
        do {
            client = try OutboundClient(configuration: configuration)
        } catch {
            throw Self.fail("the HTTPS client cannot start: \(error.message)")
        }
        var options = HostChecker.Options()
        options.cdn = cdn == "none" ? nil : cdn
        options.dal = dal == "none" ? nil : dal
        options.dalConnectTo = dalConnectTo
        options.dalKey = givenDALKey
        options.connectTo = connectTo
        options.apps = apps
        let reports = targets.map {
            HostChecker(client: client, options: $0.options(options), cdnConnectTo: cdnConnectTo).check($0.host)
        }
        switch format {
        case .json:
            JSONOutput.print(CheckOutput(hosts: reports, entitlements: entitlements == nil ? nil : entitlementProblems))
        case .text:
            for problem in entitlementProblems {
                print("entitlements: error: \(TerminalText.escaped(problem.message))\n  fix: \(TerminalText.escaped(problem.fix))")
            }
            for (index, report) in reports.enumerated() {
                if index > 0 || !entitlementProblems.isEmpty { print("") }
                print(Self.text(report, services: targets[index].services), terminator: "")
            }
        }
        if reports.contains(where: { !$0.ok }) || entitlementProblems.contains(where: { $0.severity == .error }) { throw ExitCode(1) }
    }

    /// What `--format json` prints: one object, so that more can be added.
    struct CheckOutput: Encodable {
        var hosts: [HostReport]
        /// The entitlements file's own problems (entries that cannot work); absent without one.
        var entitlements: [Problem]?
    }

    /// A host's report for people: a verdict line, the facts, then each problem with its fix.
    /// Each line is escaped whole (`TerminalText`): the remote server chose its headers, its
    /// body, the names in its certificate and what the CDN says, and the terminal must only show them.
    static func text(_ report: HostReport, services: [String]) -> String {
        let origin = report.origin
        var lines = [
            "\(report.host): \(report.ok ? "ok" : "PROBLEMS")" + (services.isEmpty ? "" : " (\(services.joined(separator: ", ")))")
        ]
        var originLine = "  origin: "
        if let status = origin.file.status {
            originLine += "\(status)"
            if let type = origin.file.contentType { originLine += ", \(type)" }
            if let size = origin.file.size { originLine += ", \(size) bytes" }
            if let redirect = origin.file.redirect { originLine += ", Location: \(redirect)" }
            if status == 200 { originLine += origin.file.valid ? ", valid" : ", INVALID" }
        } else {
            originLine += "no response (\(origin.file.error ?? "unknown"))"
        }
        lines.append(originLine)
        if let certificate = origin.certificate {
            lines.append(
                "  certificate: \(certificate.names.joined(separator: ", ")), valid until \(Self.date(certificate.notAfter))"
                    + (certificate.trusted ? "" : " (refused)"))
        }
        if let links = report.assetLinks {
            lines.append("  assetlinks.json: \(links.status.map(String.init) ?? "no response")" + (links.valid ? ", valid" : ""))
        }
        if let cdn = report.cdn {
            lines.append(
                "  Apple CDN: \(cdn.state.rawValue)" + (cdn.status.map { " (\($0))" } ?? "") + (cdn.failureReason.map { ": \($0)" } ?? ""))
        }
        if let dal = report.dal {
            lines.append(
                "  Google DAL: \(dal.state.rawValue)" + (dal.status.map { " (\($0))" } ?? "") + (dal.maxAge.map { ", maxAge \($0)" } ?? "")
                    + (dal.error.map { ": \($0)" } ?? ""))
            for app in dal.listed { lines.append("    listed: \(app.description)") }
            for app in dal.onlyServed { lines.append("    not listed: \(app.description)") }
            if dal.state != .current, let debug = dal.debugString { lines.append("    debugString: \(debug)") }
        }
        for app in report.apps {
            if app.services.isEmpty {
                lines.append("  \(app.appID): not in the file")
            } else {
                lines.append("  \(app.appID): \(app.services.joined(separator: ", "))")
                for rule in app.rules { lines.append("    \(rule)") }
            }
        }
        for problem in report.problems {
            lines.append("  \(problem.severity.rawValue) [\(problem.code)]: \(problem.message)")
            lines.append("    fix: \(problem.fix)")
        }
        return lines.map(TerminalText.escaped).joined(separator: "\n") + "\n"
    }

    /// Seconds since the epoch as an ISO 8601 date (UTC).
    static func date(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
