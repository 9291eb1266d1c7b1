import AASA
import HTTPCore
import SiteStore

/// The checks of the config fuzz target (scripts/fuzz.sh `config`; its entry point is in
/// Sources/aasad/FuzzEntry.swift), shared with the replay tests
/// so that every corpus input and saved failure is asserted on in the normal test run.
///
/// The same bytes are read as a site.yaml, as an aasad.yaml and as a Cache-Control value. Besides
/// not crashing (AddressSanitizer watches the C YAML parser underneath too), whatever a parser
/// accepts must be safe to serve: a cache-control that passed is non-empty and valid field bytes
/// and makes a response head of exactly its lines, and every alias is a host name in its
/// grammar.
package enum ConfigFuzz {
    /// Lines of a 200 head: Content-Type, Content-Length, ETag, Last-Modified, Cache-Control,
    /// X-Content-Type-Options (no gzip variant for a two-byte body, so no Vary).
    static let headLines = 6

    /// The body every check serves, hashed and gzipped once: that work does not depend on the
    /// input, yet redone per value it took about 9% of the fuzzer's time (perf: deflateReset 7%,
    /// SHA-256 1%). PreparedFile(content:) is how sites with the same bytes share one in the
    /// server, and the part that reads the value, the head, is still built for every value.
    private static let body = PreparedContent(body: [0x7B, 0x7D])

    /// What went wrong with one input; empty when every check holds.
    package static func check(_ bytes: [UInt8]) -> [String] {
        var failures: [String] = []
        let text = String(decoding: bytes, as: UTF8.self)

        let (site, siteProblems) = SiteSettings.parse(text, file: "site.yaml")
        if let value = site.cacheControl { failures += servable(value, from: "site.yaml") }
        for alias in site.aliases where !alias.name.utf8.allSatisfy(isHostByte) {
            failures.append("site.yaml: an alias outside the host grammar: \(alias.name.debugDescription)")
        }

        // Fallback targets: whatever a request's path holds, the Location is a field value on
        // the target's own host; a page name is a plain file name.
        for target in [site.fallback?.web, site.fallback?.ios, site.fallback?.android].compactMap({ $0 }) {
            failures += redirects(target, path: bytes)
        }
        // Every page (the site's and the routes'): a plain name of the site directory, never one
        // of its other files, and no more of them than a site may hold.
        for page in site.pageNames
        where page.hasPrefix(".") || page.contains("/") || page.isEmpty || page.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E })
            || ["tls", "site.yaml", "apple-app-site-association", "assetlinks.json", "allowed-children"].contains(page)
        {
            failures.append("site.yaml: a page name that is not a plain file name: \(page.debugDescription)")
        }
        if site.pageNames.count > SiteSettings.maximumPages {
            failures.append("site.yaml: \(site.pageNames.count) pages accepted; at most \(SiteSettings.maximumPages)")
        }
        if let target = try? RedirectTemplate(parsing: text) { failures += redirects(target, path: bytes) }
        failures += routes(site, value: bytes)

        var settings = ServerSettings()
        let settingsProblems = settings.apply(yaml: text, file: "aasad.yaml")
        // What a file says is quoted escaped where the message is made (`TerminalText`): no
        // message can carry a control or bidi character to a terminal or a log line.
        for message in siteProblems.map(\.message) + settingsProblems.map(\.description)
        where message.unicodeScalars.contains(where: TerminalText.isEscaped) {
            failures.append("a message with a control or bidi character: \(message.debugDescription)")
        }
        failures += servable(settings.cacheControl, from: "aasad.yaml")

        // The value check itself: accepted exactly when every byte is allowed (all ASCII, so the
        // String decoded from them holds these very bytes).
        let accepted = ServingOptions.problem(cacheControl: text) == nil
        let expected =
            !bytes.isEmpty && bytes.count <= HTTPField.maximumValueLength
            && bytes.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) } && bytes.first != 0x20 && bytes.first != 0x09
            && bytes.last != 0x20 && bytes.last != 0x09
        if accepted != expected { failures.append("value check: accepted \(accepted), expected \(expected)") }
        if accepted { failures += servable(text, from: "value") }
        failures += allowFile(bytes)
        return failures
    }

    /// The same bytes as a `per-name` site's allow file (`allowed-children`, Daemon+Children.swift):
    /// what it accepts is names and first-label patterns in the host grammar, a name it lists is
    /// allowed, and its refusal quotes no byte of the file.
    private static func allowFile(_ bytes: [UInt8]) -> [String] {
        switch AllowedChildren.parse(bytes) {
        case .failure(let problem):
            if problem.message.unicodeScalars.contains(where: { !$0.isASCII || $0.value < 0x20 || $0.value == 0x7F }) {
                return ["allowed-children: a refusal with a byte outside printable ASCII: \(problem.message.debugDescription)"]
            }
            return []
        case .success(let allowed):
            var failures: [String] = []
            for name in allowed.names where !HostName.isPlain(name.utf8) || !allowed.allows(name) {
                failures.append("allowed-children: an entry outside the host grammar, or not allowed: \(name.debugDescription)")
            }
            for (rest, patterns) in allowed.patterns {
                for pattern in patterns {
                    let example = pattern.prefix + "z" + pattern.suffix + "." + rest
                    if !HostName.isPlain(example.utf8) || !allowed.allows(example) {
                        failures.append("allowed-children: a pattern that allows nothing: \(example.debugDescription)")
                    }
                }
            }
            return failures
        }
    }

    /// A Cache-Control value that was accepted: valid bytes, and a head of exactly its lines.
    private static func servable(_ value: String, from source: String) -> [String] {
        guard !value.isEmpty, HTTPField.isValidValue(value.utf8) else {
            return ["\(source): accepted a cache-control that is not a field value: \(value.debugDescription)"]
        }
        guard let file = try? PreparedFile(content: body, modified: 0, options: ServingOptions(cacheControl: value)) else {
            return ["\(source): an accepted cache-control that PreparedFile refuses: \(value.debugDescription)"]
        }
        let head = file.headers.http1
        let lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).count - 1
        let bare = head.indices.contains { head[$0] == 0x0D && head.dropFirst($0 + 1).first != 0x0A }
        if lines != headLines || bare { return ["\(source): the head has \(lines) lines for \(value.debugDescription)"] }
        return []
    }

    /// A target that was accepted, rendered with `path`: a valid field value, https, and the
    /// same authority as the target's text (the path can never move the host).
    private static func redirects(_ target: RedirectTemplate, path: [UInt8]) -> [String] {
        let location = path.withUnsafeBytes { target.render(pathAndQuery: $0) }
        func authority(_ url: some Collection<UInt8>) -> [UInt8] {
            Array(url.dropFirst(8).prefix { !"/?#{".utf8.contains($0) })
        }
        let scheme = Array("https://".utf8)
        guard location.count > scheme.count, location.prefix(scheme.count).map({ $0 | 0x20 }) == scheme else {
            return ["a redirect that is not https: \(target.text.debugDescription)"]
        }
        if authority(location) != authority(Array(target.text.utf8)) || authority(location).isEmpty {
            return ["a path moved the host of \(target.text.debugDescription)"]
        }
        // A Location past its own bound is answered 414 and never sent (fallbackDecision); within
        // it, every byte must be one a field value may hold. Configuration's shorter bound on a
        // value (HTTPField.maximumValueLength) is not a Location's: a path of escapes triples.
        guard location.count <= RedirectTarget.maximumLocationLength else { return [] }
        switch HTTPField.valueProblem(location) {
        case nil, .tooLong?: return []
        default: return ["a Location that is not a field value, from \(target.text.debugDescription)"]
        }
    }

    /// User-Agents of a phone, a crawler and an in-app browser: each answer kind a route gives.
    private static let agents = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X)", "Slackbot-LinkExpanding 1.0",
        "Mozilla/5.0 (iPhone) Instagram 334.0", "",
    ].map { Array($0.utf8) }

    /// Every accepted route, asked for a path whose captures hold the input (less '/', '?' and
    /// '#', which a segment cannot): a redirect stays on its target's host as a field value, and
    /// a preview or interstitial page has exactly the tags and quotes it has with a plain capture
    /// (no capture adds a tag or ends an attribute), and no control or bidi character.
    private static func routes(_ settings: SiteSettings, value: [UInt8]) -> [String] {
        guard !settings.links.routes.isEmpty else { return [] }
        var failures: [String] = []
        let segment = value.filter { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        let site = ServedSite(
            directory: "a.test", hosts: [], aasa: nil, assetLinks: nil, certificate: nil, loadedAt: 0,
            fallback: PreparedFallback.prepare(settings.fallback, hasPage: settings.page != nil), fallbackSettings: settings.fallback,
            routes: PreparedRoutes.prepare(settings.links.routes, site: settings.links), links: settings.links)
        func path(_ route: RouteSettings, _ capture: [UInt8]) -> [UInt8] {
            var out: [UInt8] = []
            var inName = false
            for c in route.pattern.text.utf8 {
                if inName {
                    if c == UInt8(ascii: "}") {
                        inName = false
                        out += capture
                    }
                    continue
                }
                switch c {
                case UInt8(ascii: "{"): inName = true
                case UInt8(ascii: "*"), UInt8(ascii: "?"): out.append(UInt8(ascii: "x"))
                default: out.append(c)
                }
            }
            return out
        }
        // The input's bytes, and a fixed hostile capture (a preview cuts a capture at 200
        // characters, so the input's own quotes may lie past what is shown).
        let segments = [segment, Array("\"'<&>%22%3Cscript%3E%0d%0a%E2%80%AE".utf8)].filter { !$0.isEmpty }
        for route in settings.links.routes.prefix(8) {
            for hostile in segments.map({ path(route, $0) }) {
                failures += routeAnswers(site, route: route, plain: path(route, Array("x".utf8)), hostile: hostile)
            }
        }
        return failures
    }

    /// One route asked for a plain and a hostile path, by each of `agents`.
    private static func routeAnswers(_ site: ServedSite, route: RouteSettings, plain: [UInt8], hostile: [UInt8]) -> [String] {
        var failures: [String] = []
        func shape(_ body: [UInt8]) -> [Int] {
            [body.count(where: { $0 == UInt8(ascii: "<") }), body.count(where: { $0 == UInt8(ascii: "\"") })]
        }
        for agent in agents {
            func ask(_ p: [UInt8]) -> LinkAnswer? {
                p.withUnsafeBytes { p in
                    agent.withUnsafeBytes { site.linkAnswer(host: "a.test", path: p, pathAndQuery: p, userAgent: $0) }
                }
            }
            guard let answer = ask(hostile) else { continue }
            switch answer.kind {
            case .redirect(_, let location?):
                let problem = HTTPField.valueProblem(location)
                let tooLong = if case .tooLong? = problem { true } else { false }
                if location.count <= RedirectTarget.maximumLocationLength, problem != nil, !tooLong {
                    failures.append("a route's Location that is not a field value, from \(route.pattern.text.debugDescription)")
                }
            case .preview(_, let body), .interstitial(_, let body):
                let text = String(decoding: body, as: UTF8.self)
                if text.unicodeScalars.contains(where: { LinkPages.isUnsafe($0) && $0 != "\n" }) {
                    failures.append("a page with a control or bidi character, for \(route.pattern.text.debugDescription)")
                }
                if let reference = ask(plain), case .preview(_, let b) = reference.kind, case .preview = answer.kind,
                    shape(b) != shape(body)
                {
                    failures.append("a capture changed the preview's tags or quotes, for \(route.pattern.text.debugDescription)")
                }
                if let reference = ask(plain), case .interstitial(_, let b) = reference.kind, case .interstitial = answer.kind,
                    shape(b) != shape(body)
                {
                    failures.append("a capture changed the interstitial's tags or quotes, for \(route.pattern.text.debugDescription)")
                }
            default:
                break
            }
        }
        return failures
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x2E || byte == 0x2A
    }
}
