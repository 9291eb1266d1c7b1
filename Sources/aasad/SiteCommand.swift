import ArgumentParser
import Daemon
import Foundation
import SafeText
import TenantClient

/// `aasad site put|get|delete|list`: a running aasad's tenant API (docs/api.md) from the shell,
/// for a platform's scripts and for an operator. The token comes from `AASAD_API_TOKEN` only: a
/// flag would show in `ps` to every user of the machine.
struct SiteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "site",
        abstract: "Add, replace, read, remove and list sites through a running aasad's tenant API.",
        discussion: """
            The token is read from AASAD_API_TOKEN, never from a flag. --api (or AASAD_API_URL, \
            default http://127.0.0.1:8444) takes https, or plain http to a loopback address only. \
            Exit status: 0 when the API answered 2xx, 1 when it answered an error (its problems \
            printed), 2 for bad arguments, 3 when the API could not be reached.
            """,
        subcommands: [SitePutCommand.self, SiteGetCommand.self, SiteDeleteCommand.self, SiteListCommand.self]
    )

    /// Exit status when the API could not be reached (no connection, TLS refused, timeout, an
    /// answer over the client's bounds).
    static let unreachable = ExitCode(3)
    /// Exit status for bad arguments: the contract's 2 for `site` (ArgumentParser's default is 64).
    static let usage = ExitCode(2)

    /// Runs `aasad site ...` with usage errors mapped to `usage` (ArgumentParser's own parse
    /// errors included), everything else as `AASACommand.main` would.
    static func main(_ arguments: [String]) -> Never {
        do {
            var command = try AASACommand.parseAsRoot(arguments)
            try command.run()
            AASACommand.exit()
        } catch {
            if AASACommand.exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((AASACommand.fullMessage(for: error) + "\n").utf8))
                AASACommand.exit(withError: usage)
            }
            AASACommand.exit(withError: error)
        }
    }
}

/// What every `site` command shares: where the API is, how long to wait, the output format.
struct SiteAPIOptions: ParsableArguments {
    @Option(help: "The API's base URL: https, or http to a loopback address (environment: AASAD_API_URL).")
    var api: String = ProcessInfo.processInfo.environment["AASAD_API_URL"] ?? "http://127.0.0.1:8444"

    @Option(name: .customLong("cacert"), help: "Roots (PEM) to trust for an https API instead of the system's.")
    var caFile: String?

    @Option(help: "Seconds a request may take in all (a PUT waits up to 5 s for the site to be served).")
    var timeout: Int = 30

    @Option(help: "Output format: text for people, json for scripts (the API's answer, escaped).")
    var format: OutputFormat = .text

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout takes 1 to 300 seconds.") }
        if let problem = TenantClient.baseURLProblem(api) { throw ValidationError("--api \(problem)") }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--cacert: cannot read \(TerminalText.escaped(caFile))")
        }
    }

    /// The client, with the token from the environment.
    func client() throws -> SiteReport {
        guard let token = ProcessInfo.processInfo.environment["AASAD_API_TOKEN"], !token.isEmpty else {
            throw ValidationError("Set AASAD_API_TOKEN to the API token (never given as a flag: it would show in ps).")
        }
        if let problem = TenantClient.tokenProblem(token) { throw ValidationError("AASAD_API_TOKEN \(problem)") }
        let client = TenantClient(
            base: api, token: token, caFile: caFile, timeoutSeconds: timeout, userAgent: "aasad/\(AASACommand.version)")
        return SiteReport(client: client, format: format)
    }
}

/// `aasad site put HOST --aasa FILE ...`
struct SitePutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Create or replace a whole site (PUT /v1/sites/HOST); files are checked as `aasad validate` checks them.")

    @OptionGroup var options: SiteAPIOptions

    @Argument(help: "The site's host name, lower case (e.g. links.example.com or *.example.com).")
    var host: String

    @Option(help: ArgumentHelp("The apple-app-site-association file (a JSON object).", valueName: "file"))
    var aasa: String

    @Option(help: ArgumentHelp("The assetlinks.json file (a JSON array).", valueName: "file"))
    var assetlinks: String?

    @Option(help: ArgumentHelp("The site's settings: site.yaml keys, as YAML or JSON.", valueName: "file"))
    var settings: String?

    @Option(help: ArgumentHelp("An HTML page served at the host's root (written as index.html).", valueName: "file"))
    var page: String?

    @Option(
        name: .customLong("if-match"),
        help: ArgumentHelp("Replace only while the site's ETag is this one (or *: only if it exists).", valueName: "etag"))
    var ifMatch: String?

    func validate() throws {
        if let problem = TenantClient.hostProblem(host) { throw ValidationError(problem) }
        if let ifMatch, let problem = TenantClient.etagProblem(ifMatch) { throw ValidationError("--if-match \(problem)") }
    }

    func run() throws {
        let client = try options.client()
        let body: [UInt8]
        do {
            body = try SiteRequestBody.make(aasa: aasa, assetlinks: assetlinks, settings: settings, page: page)
        } catch {
            throw ValidationError(error.message)
        }
        try client.send(.put, path: TenantClient.sitePath(host), body: body, ifMatch: ifMatch)
    }
}

/// `aasad site get HOST`
struct SiteGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Show a site as the API sees it: files, ETag, served, problems, aliases, certificate.")

    @OptionGroup var options: SiteAPIOptions

    @Argument(help: "The site's host name.")
    var host: String

    func validate() throws {
        if let problem = TenantClient.hostProblem(host) { throw ValidationError(problem) }
    }

    func run() throws { try options.client().send(.get, path: TenantClient.sitePath(host)) }
}

/// `aasad site delete HOST`
struct SiteDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Remove a site (DELETE /v1/sites/HOST).")

    @OptionGroup var options: SiteAPIOptions

    @Argument(help: "The site's host name.")
    var host: String

    @Option(name: .customLong("if-match"), help: ArgumentHelp("Remove only while the site's ETag is this one.", valueName: "etag"))
    var ifMatch: String?

    func validate() throws {
        if let problem = TenantClient.hostProblem(host) { throw ValidationError(problem) }
        if let ifMatch, let problem = TenantClient.etagProblem(ifMatch) { throw ValidationError("--if-match \(problem)") }
    }

    func run() throws { try options.client().send(.delete, path: TenantClient.sitePath(host), ifMatch: ifMatch) }
}

/// `aasad site list [--limit N] [--all]`
struct SiteListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the sites the token may see: host, served, problems, ETag (GET /v1/sites).")

    @OptionGroup var options: SiteAPIOptions

    @Option(help: "Sites per page, 1 to 1000.")
    var limit: Int = 100

    @Flag(help: "Follow the pages to the end (at most \(TenantClient.maximumPages) pages).")
    var all = false

    @Option(help: ArgumentHelp("Start at this page (the `next` a previous page gave).", valueName: "cursor"))
    var cursor: String?

    func validate() throws {
        guard (1...TenantClient.maximumPageSize).contains(limit) else {
            throw ValidationError("--limit takes 1 to \(TenantClient.maximumPageSize).")
        }
        if let cursor, cursor.utf8.count > TenantClient.maximumCursorBytes {
            throw ValidationError("--cursor is longer than \(TenantClient.maximumCursorBytes) bytes.")
        }
    }

    func run() throws { try options.client().list(limit: limit, all: all, cursor: cursor) }
}
