import AASA
import ArgumentParser
import Daemon
import Foundation
import HTTPCore
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
                results = urls.map { Self.evaluate($0, matcher: matcher, site: nil, needsHost: false) }
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
            var report = evaluate(text, matcher: matcher, site: site.directory, needsHost: true)
            report.browser = registry.snapshot.sites[name].flatMap { browserAnswers(url, site: $0) }
            return report
        }
    }

    /// What a browser gets for the URL when no app opens it, per platform, for a site with
    /// routes, a fallback or a page (the same decision serve makes, `ServedSite.linkAnswer`, for a
    /// phone or desktop browser of each platform); nil for other sites.
    static func browserAnswers(_ url: LinkURL, site: ServedSite) -> [URLReport.BrowserAnswer]? {
        guard site.fallback != nil || site.routes != nil else { return nil }
        // The request target a client sends for the URL: its path and query as written (what a
        // URL may not hold percent-encoded, as clients do, LinkURL), an empty path as "/" (RFC
        // 9110 §4.2.3), no fragment. It goes through the same entry as serve's requests.
        let target = Array((url.path.isEmpty ? "/" : url.path).utf8) + (url.query.map { Array("?\($0)".utf8) } ?? [])
        // A browser of each platform, as ClientPlatform reads it.
        let agents: [ClientPlatform: [UInt8]] = [.web: [], .ios: Array("(iPhone)".utf8), .android: Array("(Linux; Android 14)".utf8)]
        return ClientPlatform.allCases.map { platform in
            var answer = URLReport.BrowserAnswer(platform: platform.label, status: 404)
            let host = site.hosts.first?.description ?? site.directory
            let link = target.withUnsafeBytes { target in
                (agents[platform] ?? []).withUnsafeBytes { site.linkAnswer(host: host, target: target, userAgent: $0) }
            }
            // Whether the work budget cut the walk (serve counts it, `routeWalksCut`): asked of
            // the same walk when no route answered, so that a fallback answer says why.
            if link?.route == nil, let routes = site.routes {
                let end = target.firstIndex(of: UInt8(ascii: "?")) ?? target.count
                let cut = target[..<end].withUnsafeBytes {
                    PreparedFallback.covers(path: $0) && routes.walk(path: $0, platform: platform).cut
                }
                if cut { answer.routeWalkCut = true }
            }
            guard let link else { return answer }
            answer.route = link.route
            answer.routePath = link.route.map { site.links.routes[$0].pattern.text }
            switch link.kind {
            case .tooLong:
                answer.status = 414
            case .page(let file):
                answer.status = 200
                answer.page = true
                answer.pageFile = site.pages.first { $0.value === file }?.key
            case .preview, .interstitial:
                answer.status = 200
            case .redirect(let redirect, let location):
                answer.status = redirect.status.rawValue
                answer.location = location.map { String(decoding: $0, as: UTF8.self) } ?? redirect.headers.value(of: "Location")
            }
            return answer
        }
    }

    static func evaluate(_ text: String, matcher: Matcher, site: String?, needsHost: Bool) -> URLReport {
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
