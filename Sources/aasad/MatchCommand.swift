import AASA
import ArgumentParser
import Daemon
import Foundation
import SiteStore

/// `aasad match`: which app opens each URL, and which rule decided — `swcutil verify` on Linux.
struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Tell which app opens each URL under an AASA file, and which rule decided.",
        discussion: """
            With --file, URLs may be full http(s) URLs or paths such as /buy/1?ref=x. With --config, \
            each URL's host picks the site (exact host first, then the longest wildcard). Each app \
            named in the file gets one line: matched, blocked (by an exclude component or NOT path) \
            or no match. Exit status 0 when every URL was evaluated, 1 otherwise.

            --expect APPID (or none) turns it into an assertion for an app's CI: exit status 1 \
            unless every URL opens exactly that app (or, with none, no app), with one line on \
            standard error per URL that does not.
            """
    )

    @Option(name: .long, help: "An apple-app-site-association file.")
    var file: String?

    @Option(name: .long, help: "A config directory; the URL's host picks the site.")
    var config: String?

    @Option(help: "Output format: text for people, json for scripts.")
    var format: OutputFormat = .text

    @Option(
        help: ArgumentHelp(
            "Assert that every URL opens this app (TEAMID.bundle.id), or no app with 'none'; exit 1 otherwise.",
            valueName: "appid|none"))
    var expect: String?

    @Argument(help: "URLs to evaluate.")
    var urls: [String]

    func validate() throws {
        if (file == nil) == (config == nil) {
            throw ValidationError("Give exactly one of --file FILE or --config DIR.")
        }
        if urls.isEmpty {
            throw ValidationError("Name at least one URL, e.g. 'aasad match --file aasa.json https://example.com/buy/1'.")
        }
        if let expect, expect != "none", let problem = AppIdentifier.problem(with: expect) {
            throw ValidationError("--expect takes an app ID, or none: \(problem)")
        }
    }

    func run() throws {
        var results: [URLReport] = []
        if let file {
            switch Self.loadMatcher(path: file, displayPath: file) {
            case .failure(let problem):
                results = urls.map { URLReport(url: $0, error: problem.message, findings: problem.findings) }
            case .success(let matcher):
                results = urls.map { Self.evaluate($0, matcher: matcher, site: nil) }
            }
        } else if let config {
            // The registry serve loads with: a host is answered by the site serve would answer it
            // with, or reported as serve would leave it (a conflict, a refused site).
            let registry = SiteRegistry.inspecting(root: config)
            registry.reloadAll()
            results = urls.map { Self.evaluate($0, in: registry, root: config) }
        }
        switch format {
        case .json:
            if results.count == 1 { JSONOutput.print(results[0]) } else { JSONOutput.print(results) }
        case .text:
            for (i, r) in results.enumerated() {
                if i > 0 { print("") }
                r.printText()
            }
        }
        if results.contains(where: { $0.error != nil }) { throw ExitCode(1) }
        if let expect {
            let unmet = results.compactMap { Self.unmetExpectation(expect, $0) }
            for line in unmet { FileHandle.standardError.write(Data((TerminalText.escaped(line) + "\n").utf8)) }
            if !unmet.isEmpty { throw ExitCode(1) }
        }
    }

    /// Why a URL's answer is not the expected one (`--expect`), or nil when it is.
    static func unmetExpectation(_ expect: String, _ report: URLReport) -> String? {
        let wanted = expect == "none" ? nil : expect
        guard report.appID != wanted else { return nil }
        let got = report.appID.map { "opens \($0)" } ?? "opens no app"
        let rule = report.decidedBy.map { " (decided by \($0.text))" } ?? ""
        return "\(report.url): \(got)\(rule), expected \(wanted.map { "it to open \($0)" } ?? "no app")"
    }

    struct LoadProblem: Error {
        var message: String
        var findings: [ValidationReport.Finding]
    }

    static func loadMatcher(path: String, displayPath: String) -> Result<Matcher, LoadProblem> {
        switch ConfigLoader.readBounded(path: path, limit: AppSiteAssociation.maximumFileSize) {
        case .failure(let error):
            return .failure(LoadProblem(message: "\(displayPath): cannot read the file: \(error)", findings: []))
        case .success(let bytes):
            return matcher(AppSiteAssociation.validate(bytes), displayPath: displayPath)
        }
    }

    /// A matcher for a valid file; an invalid one is refused, as `serve` would not publish it.
    static func matcher(_ result: ValidationResult<AppSiteAssociation>, displayPath: String) -> Result<Matcher, LoadProblem> {
        guard result.isValid, let document = result.document else {
            let errors = result.diagnostics.errors
            return .failure(
                LoadProblem(
                    message:
                        "\(displayPath) is invalid (\(errors.count) error\(errors.count == 1 ? "" : "s")), so no device would use it; run 'aasad validate \(displayPath)'",
                    findings: errors.map(ValidationReport.finding)))
        }
        return .success(Matcher(document))
    }

    static func evaluate(_ text: String, in registry: SiteRegistry, root: String) -> URLReport {
        let url: LinkURL
        do {
            url = try LinkURL(parsing: text)
        } catch {
            return URLReport(url: text, error: error.description)
        }
        guard let host = url.host else {
            return URLReport(url: text, error: "with --config the URL needs a host, e.g. https://example.com\(url.path)")
        }
        let name: String
        switch registry.answer(forHost: host) {
        case .unclaimed:
            return URLReport(url: text, error: "no site in \(root) serves \(host)")
        case .served(let site), .refused(let site):
            name = site
        }
        guard let site = registry.source(of: name) else {
            return URLReport(url: text, error: "no site in \(root) serves \(host)")
        }
        guard let aasa = site.aasa else {
            return URLReport(url: text, site: site.directory, error: "\(site.directory) has no apple-app-site-association file")
        }
        let display = ValidationReport.join(root, aasa.relativePath)
        switch matcher(aasa.result, displayPath: display) {
        case .failure(let problem):
            return URLReport(url: text, site: site.directory, error: problem.message, findings: problem.findings)
        case .success(let matcher):
            var report = evaluate(text, matcher: matcher, site: site.directory)
            report.browser = registry.snapshot.sites[name].flatMap { $0.browserAnswers(url) }
            return report
        }
    }

    static func evaluate(_ text: String, matcher: Matcher, site: String?) -> URLReport {
        do {
            let url = try LinkURL(parsing: text)
            let result = try matcher.evaluate(url)
            return URLReport(text, result, site: site, services: matcher.file)
        } catch let error as LinkURL.ParseError {
            return URLReport(url: text, site: site, error: error.description)
        } catch let error as MatchError {
            return URLReport(url: text, site: site, error: error.description)
        } catch {
            return URLReport(url: text, site: site, error: "\(error)")
        }
    }
}
