import ArgumentParser
import Daemon
import Foundation
import SafeText
import SiteStore
import StrictJSON
import Yams

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
        if let problem = SiteClient.baseURLProblem(api) { throw ValidationError("--api \(problem)") }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--cacert: cannot read \(TerminalText.escaped(caFile))")
        }
    }

    /// The client, with the token from the environment.
    func client() throws -> SiteClient {
        guard let token = ProcessInfo.processInfo.environment["AASAD_API_TOKEN"], !token.isEmpty else {
            throw ValidationError("Set AASAD_API_TOKEN to the API token (never given as a flag: it would show in ps).")
        }
        if let problem = SiteClient.tokenProblem(token) { throw ValidationError("AASAD_API_TOKEN \(problem)") }
        return SiteClient(base: api, token: token, caFile: caFile, timeoutSeconds: timeout, format: format)
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
        if let problem = SiteClient.hostProblem(host) { throw ValidationError(problem) }
        if let ifMatch, let problem = SiteClient.etagProblem(ifMatch) { throw ValidationError("--if-match \(problem)") }
    }

    func run() throws {
        let client = try options.client()
        let body: [UInt8]
        do {
            body = try SiteRequestBody.make(aasa: aasa, assetlinks: assetlinks, settings: settings, page: page)
        } catch let error as SiteRequestBody.Problem {
            throw ValidationError(error.message)
        }
        try client.send(.put, path: SiteClient.sitePath(host), body: body, ifMatch: ifMatch)
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
        if let problem = SiteClient.hostProblem(host) { throw ValidationError(problem) }
    }

    func run() throws { try options.client().send(.get, path: SiteClient.sitePath(host)) }
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
        if let problem = SiteClient.hostProblem(host) { throw ValidationError(problem) }
        if let ifMatch, let problem = SiteClient.etagProblem(ifMatch) { throw ValidationError("--if-match \(problem)") }
    }

    func run() throws { try options.client().send(.delete, path: SiteClient.sitePath(host), ifMatch: ifMatch) }
}

/// `aasad site list [--limit N] [--all]`
struct SiteListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the sites the token may see: host, served, problems, ETag (GET /v1/sites).")

    @OptionGroup var options: SiteAPIOptions

    @Option(help: "Sites per page, 1 to 1000.")
    var limit: Int = 100

    @Flag(help: "Follow the pages to the end (at most \(SiteClient.maximumPages) pages).")
    var all = false

    @Option(help: ArgumentHelp("Start at this page (the `next` a previous page gave).", valueName: "cursor"))
    var cursor: String?

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit takes 1 to 1000.") }
        if let cursor, cursor.utf8.count > 1024 { throw ValidationError("--cursor is longer than 1024 bytes.") }
    }

    func run() throws { try options.client().list(limit: limit, all: all, cursor: cursor) }
}

/// The PUT body built from the user's files: each JSON file checked by the project's strict
/// parser and embedded as written (its bytes are what the API validates and writes), the
/// settings converted from YAML when they are not JSON, the page as a JSON string.
enum SiteRequestBody {
    struct Problem: Error { var message: String }

    /// The API's whole-request bound (docs/api.md, the listener's maximumBodyBytes): a larger
    /// body is refused here with the file named instead of a 413 from the server.
    static let maximumBytes = 1 << 20

    static func make(aasa: String, assetlinks: String?, settings: String?, page: String?) throws(Problem) -> [UInt8] {
        var body = Array(#"{"aasa":"#.utf8) + (try json(aasa, expecting: "an object"))
        if let assetlinks { body += Array(#","assetlinks":"#.utf8) + (try json(assetlinks, expecting: "an array")) }
        if let settings { body += Array(#","settings":"#.utf8) + (try settingsJSON(settings)) }
        if let page {
            let bytes = try read(page)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw Problem(message: "\(TerminalText.escaped(page)): not UTF-8 text")
            }
            body += Array(#","page":"#.utf8) + Array(JSONValue.quote(text).utf8)
        }
        body += Array("}".utf8)
        guard body.count <= maximumBytes else {
            throw Problem(message: "the request would be \(body.count) bytes; the API takes at most \(maximumBytes)")
        }
        return body
    }

    /// A file's bytes, bounded, refused unless a regular file.
    static func read(_ path: String) throws(Problem) -> [UInt8] {
        switch ConfigLoader.readBounded(path: path, limit: maximumBytes) {
        case .success(let bytes) where bytes.count > maximumBytes:
            throw Problem(message: "\(TerminalText.escaped(path)): larger than the API's \(maximumBytes) bytes")
        case .success(let bytes): return bytes
        case .failure(let error):
            throw Problem(message: "\(TerminalText.escaped(path)): cannot read: \(TerminalText.escaped(error.description))")
        }
    }

    static func json(_ path: String, expecting kind: String) throws(Problem) -> [UInt8] {
        let bytes = try read(path)
        do {
            let value = try JSONParser.parse(bytes)
            guard value.typeName == kind else { throw Problem(message: "\(TerminalText.escaped(path)): \(value.typeName), not \(kind)") }
            return bytes
        } catch let error as JSONSyntaxError {
            throw Problem(
                message:
                    "\(TerminalText.escaped(path)):\(error.location.line):\(error.location.column): \(TerminalText.escaped(error.message))")
        } catch let error as Problem {
            throw error
        } catch {
            throw Problem(message: "\(TerminalText.escaped(path)): \(error)")
        }
    }

    /// site.yaml keys as JSON: the file as is when it is a JSON object, else its YAML mapping
    /// converted (Yams, the loader's own YAML library).
    static func settingsJSON(_ path: String) throws(Problem) -> [UInt8] {
        let bytes = try read(path)
        if let value = try? JSONParser.parse(bytes) {
            guard value.typeName == "an object" else { throw Problem(message: "\(TerminalText.escaped(path)): settings must be a mapping") }
            return bytes
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Problem(message: "\(TerminalText.escaped(path)): not UTF-8 text")
        }
        do {
            guard let mapping = try Yams.load(yaml: text) as? [String: Any], JSONSerialization.isValidJSONObject(mapping) else {
                throw Problem(message: "\(TerminalText.escaped(path)): settings must be a YAML mapping of plain values")
            }
            return Array(try JSONSerialization.data(withJSONObject: mapping, options: [.sortedKeys, .withoutEscapingSlashes]))
        } catch let error as Problem {
            throw error
        } catch {
            throw Problem(message: "\(TerminalText.escaped(path)): not YAML: \(TerminalText.escaped(String(describing: error)))")
        }
    }
}
