import Foundation
import HTTPCore
import SafeText
import Served

/// A site's optional `site.yaml`:
///
/// ```yaml
/// aliases:            # more host names served by this site
///   - www.example.com
///   - example.net
/// cache-control: max-age=60   # this site's Cache-Control (default: the server's)
/// fallback:                    # every other GET/HEAD path (docs/link-domain.md)
///   web: https://www.example.com{path}          # {path}: the request's path and query
///   ios: https://apps.apple.com/app/id1234567890
///   android: https://play.google.com/store/apps/details?id=com.example
///   status: 302                # 301, 302, 307 or 308
/// fallback-cache-control: no-store   # the redirects' Cache-Control (default no-store)
/// page: landing.html           # or: this file of the site's directory, as text/html
/// routes:                      # per path (docs/link-domain.md); a route may name a page of its own
///   - path: /help
///     page: help.html
/// certificates: per-name       # a wildcard site: a certificate per child name (docs/acme.md)
/// ```
///
/// Unknown keys are errors naming the key (a typo must not be silently ignored).
public struct SiteSettings: Sendable, Equatable {
    public var aliases: [HostName] = []
    public var cacheControl: String?
    /// Redirects for other paths; nil when site.yaml has no `fallback`.
    public var fallback: FallbackSettings?
    /// The name of the page served for other paths, in the site's directory.
    public var page: String?
    /// `routes`, the site's `preview` and `interstitial`, and `fallback-cache-control` again
    /// (the routes' answers share it).
    public var links = SiteLinkSettings()
    /// `certificates:` (`per-name` or `wildcard`); nil: `acme.wildcard-certificates` decides.
    public var certificates: WildcardCertificates?

    /// Largest site.yaml read.
    public static let maximumFileSize = 64 * 1024
    static let keys = [
        "aliases", "cache-control", "fallback", "fallback-cache-control", "page", "routes", "preview", "interstitial", "certificates",
    ]
    static let fallbackKeys = ["web", "ios", "android", "status"]
    /// Longest page file name (NAME_MAX).
    static let maximumPageNameLength = 255
    /// Most distinct pages one site.yaml names (`page:` and the routes' `page:` together). Each is
    /// read, checked and held in memory as the site's page is (at most
    /// `LandingPage.maximumFileSize`, and together `maximumPageBytes`), so this bounds how many
    /// files one reload reads for it; a link domain's fixed pages (help, privacy, an invite or
    /// two) are a handful. Routes may share a page: the bound counts names, not routes.
    public static let maximumPages = 16
    /// Most bytes a site's pages hold together (their bodies, each at most
    /// `LandingPage.maximumFileSize`). Without it, 16 pages of 128 KB (and a gzip form of each)
    /// would be 4 MB a site, and a few hundred tenants could fill the server's memory; four full
    /// pages, or a handful of ordinary ones (a few KB each), fit. Pages past it, in the order
    /// `pageNames` gives, are not served, named in the error (docs/link-domain.md).
    public static let maximumPageBytes = 512 * 1024

    public init(aliases: [HostName] = [], cacheControl: String? = nil, fallback: FallbackSettings? = nil, page: String? = nil) {
        self.aliases = aliases
        self.cacheControl = cacheControl
        self.fallback = fallback
        self.page = page
    }

    /// Every page this site.yaml names, each once: `page:` first, then the routes' in table order.
    public var pageNames: [String] {
        var names: [String] = []
        for name in [page] + links.routes.map(\.page) {
            if let name, !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// Which page each path may take: `page:`, and every route's path and page in order (a route
    /// without a page still decides which paths the others take). When it changes, a URL may
    /// take another page than before.
    var pagePaths: [String?] { [page] + links.routes.flatMap { [$0.pattern.text, $0.page] } }

    /// What takes the page `name`: "the site's page" and/or "the page of routes[i] (PATH), …", for messages
    /// (the first few routes, then how many more). Route paths hold only URL bytes, and are
    /// escaped all the same.
    public func takers(of name: String) -> String {
        var routes = links.routes.enumerated().filter { $0.element.page == name }.prefix(4).map { index, route in
            "routes[\(index)] (\(TerminalText.escaped(route.pattern.text)))"
        }
        let count = links.routes.count { $0.page == name }
        if count > 3 { routes = routes.prefix(3) + ["\(count - 3) more"] }
        let site = page == name ? "the site's page" : nil
        let taken = routes.isEmpty ? nil : "the page of " + routes.joined(separator: ", ")
        return [site, taken].compactMap { $0 }.joined(separator: " and ")
    }

    /// Why a name cannot be a site's page, or nil when it can: a plain file name of the site's
    /// directory (no path, not hidden, not one of the files the site already serves).
    static func pageNameProblem(_ name: String) -> String? {
        let allowed = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x5F
        }
        guard !name.isEmpty, name.utf8.count <= maximumPageNameLength, allowed, !name.hasPrefix(".") else {
            return "must be the name of a file in the site's directory (letters, digits, '.', '-', '_'), e.g. landing.html"
        }
        if ConfigLoader.knownSiteEntries.contains(name) { return "\(name) is already one of the site's files" }
        return nil
    }

    /// Parses site.yaml text; the problems say what is wrong, key by key.
    public static func parse(_ text: String, file: String) -> (SiteSettings, [ConfigProblem]) {
        var settings = SiteSettings()
        var problems: [ConfigProblem] = []
        func problem(_ message: String) { problems.append(ConfigProblem(severity: .error, file: file, message: message)) }
        var sawFallback = false
        var fallbackStatus: Status?
        var fallbackCacheControl: String?
        var previewKeys: [YAMLEntry] = []
        YAMLKeys.walk(text, isSection: { $0 == "fallback" || $0 == "preview" }, enter: { if $0 == "fallback" { sawFallback = true } }) {
            entry in
            // The key and its line, so that a long file's problem can be found (1-based).
            let at = entry.path + (entry.line.map { " (line \($0))" } ?? "")
            switch entry.path {
            case "aliases":
                guard case .list(let items) = entry.value else {
                    problem("\(at): must be a list of host names")
                    return
                }
                for item in items {
                    guard let name = item else {
                        problem("\(at): each entry must be a host name")
                        continue
                    }
                    // HostName admits only letters, digits, '-', '.' and a leading '*': no byte
                    // that could reach a header or a log line as anything else.
                    do {
                        settings.aliases.append(try HostName(parsing: name))
                    } catch {
                        problem("\(at): \(Self.quoted(name)): \(error)")
                    }
                }
            case "cache-control", "fallback-cache-control":
                guard case .scalar(let text) = entry.value else {
                    problem("\(at): must be one line of text, e.g. max-age=300")
                    return
                }
                if let message = ServingOptions.problem(cacheControl: text) {
                    problem("\(at): \(message)")
                    return
                }
                if entry.path == "cache-control" { settings.cacheControl = text } else { fallbackCacheControl = text }
            case "fallback.web", "fallback.ios", "fallback.android":
                sawFallback = true
                guard case .scalar(let text) = entry.value else {
                    problem("\(at): must be an https URL, e.g. https://www.example.com{path}")
                    return
                }
                do {
                    let target = try RedirectTemplate(parsing: text)
                    var fallback = settings.fallback ?? FallbackSettings()
                    switch entry.path {
                    case "fallback.web": fallback.web = target
                    case "fallback.ios": fallback.ios = target
                    default: fallback.android = target
                    }
                    settings.fallback = fallback
                } catch {
                    problem("\(at): \(Self.quoted(text)): \(error)")
                }
            case "fallback.status":
                sawFallback = true
                let allowed = FallbackSettings.statuses.map { "\($0.rawValue)" }
                guard case .scalar(let text) = entry.value, text.utf8.count == 3, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                    let code = Int(text), let status = Status(rawValue: code),
                    FallbackSettings.statuses.contains(status)
                else {
                    problem("\(at): must be one of \(allowed.joined(separator: ", "))")
                    return
                }
                fallbackStatus = status
            case "page":
                guard case .scalar(let text) = entry.value else {
                    problem("\(at): must be a file name, e.g. landing.html")
                    return
                }
                if let message = pageNameProblem(text) {
                    problem("\(at): \(Self.quoted(text)): \(message)")
                    return
                }
                settings.page = text
            case "certificates":
                let allowed = WildcardCertificates.allCases.map(\.rawValue)
                guard case .scalar(let text) = entry.value, let mode = WildcardCertificates(rawValue: text) else {
                    problem("\(at): must be one of \(allowed.joined(separator: ", "))")
                    return
                }
                settings.certificates = mode
            case "routes":
                settings.links.routes = parseRoutes(entry, problem: problem)
            case "interstitial":
                guard case .scalar(let text) = entry.value, let flag = boolean(text) else {
                    problem("\(at): must be true or false")
                    return
                }
                settings.links.interstitial = flag
            case let path where path.hasPrefix("preview."):
                previewKeys.append(YAMLEntry(path: String(path.dropFirst("preview.".count)), value: entry.value, line: entry.line))
            case let path where path.hasPrefix("fallback."):
                problem(
                    "unknown key \"\(entry.path)\"\(entry.line.map { " (line \($0))" } ?? ""); fallback knows \(fallbackKeys.joined(separator: ", "))"
                )
            default:
                problem(
                    "unknown key \"\(entry.path)\"\(entry.line.map { " (line \($0))" } ?? ""); site.yaml knows \(keys.joined(separator: ", "))"
                )
            }
        } fail: { failure in
            switch failure {
            case .syntax(let message): problem("not valid YAML: \(message)")
            case .notMapping(section: "fallback"):
                sawFallback = true
                problem(
                    "fallback: must be a mapping of keys (\(fallbackKeys.joined(separator: ", "))), e.g. web: https://www.example.com{path}"
                )
            case .notMapping(section: "preview"):
                problem("preview: must be a mapping of keys (\(PreviewSettings.keys.joined(separator: ", "))), e.g. title: Example")
            case .notMapping: problem("must be a mapping of keys (\(keys.joined(separator: ", ")))")
            }
        }
        if !previewKeys.isEmpty {
            settings.links.preview = parsePreview(previewKeys, captures: []) { key, line, message in
                problem("preview.\(key)" + (line.map { " (line \($0))" } ?? "") + ": " + message)
            }
        }
        settings.links.cacheControl = fallbackCacheControl
        // Each page is read and held as the site's page is: a bounded number per site. Past the
        // bound the routes are dropped (as past any other route bound), so that nothing reads
        // the names beyond it.
        let pageNames = settings.pageNames
        if pageNames.count > maximumPages {
            let index = settings.links.routes.firstIndex { $0.page == pageNames[maximumPages] } ?? 0
            problem(
                "routes[\(index)].page: \(quoted(pageNames[maximumPages])) is page \(maximumPages + 1) of this site; "
                    + "a site names at most \(maximumPages) pages (routes may share one)")
            settings.links.routes = []
        }
        let broken = problems.contains { $0.severity == .error }
        if var fallback = settings.fallback {
            fallback.status = fallbackStatus ?? fallback.status
            fallback.cacheControl = fallbackCacheControl
            settings.fallback = fallback
        }
        if sawFallback && settings.fallback == nil && !broken {
            problem("fallback: names no target; give at least one of web, ios, android")
        }
        if settings.fallback?.web != nil && settings.page != nil {
            problem("fallback.web and page both answer every other path: keep one (ios and android may go with page)")
        }
        if !broken, let fallback = settings.fallback, fallback.web == nil, settings.page == nil {
            let missing = [fallback.ios == nil ? "iOS" : nil, fallback.android == nil ? "Android" : nil].compactMap { $0 }
            problems.append(
                ConfigProblem(
                    severity: .warning, file: file,
                    message:
                        "fallback has no web target and there is no page: browsers \((["desktop"] + missing).joined(separator: ", ")) get 404"
                ))
        }
        if fallbackCacheControl != nil && settings.fallback == nil && settings.links.routes.isEmpty && !broken {
            problems.append(ConfigProblem(severity: .warning, file: file, message: "fallback-cache-control: unused without fallback"))
        }
        return (settings, problems)
    }

    /// A value as it appears in a message: quoted, control characters escaped (a value carrying
    /// CR or LF must not split the report or the log line).
    static func quoted(_ text: String) -> String {
        "\"" + TerminalText.escaped(text) + "\""
    }
}
