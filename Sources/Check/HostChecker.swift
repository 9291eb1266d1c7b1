public import AASA
import Foundation
public import Outbound
import SafeText
import StrictJSON

// Longer than 400 lines on purpose: the checks read top to bottom in the order Apple's fetcher
// makes them (origin file, certificate, assetlinks.json, the CDN's copy).

/// A live check of one deployed host as Apple's fetcher sees it (`aasad check`): the origin's
/// AASA file over verified TLS without following redirects, its certificate, its assetlinks.json,
/// and Apple's CDN copy compared with it. Blocking; one request at a time on the given client.
public struct HostChecker: Sendable {
    /// Apple's CDN base: the host name is appended (`…/a/v1/example.com`).
    public static let appleCDN = "https://app-site-association.cdn-apple.com/a/v1/"
    /// The User-Agent Apple's CDN fetches with; a WAF that blocks it blocks universal links.
    public static let appleUserAgent = "AASA-Bot/1.0.0"
    /// A browser's, to tell a block of Apple's fetcher from a file that is not there.
    public static let browserUserAgent =
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"
    /// A certificate this close to its end is reported (a warning): renewal has failed somewhere.
    public static let expiryWarningSeconds: Int64 = 14 * 86_400

    public struct Options: Sendable {
        /// The CDN base URL; nil skips the CDN (developer and managed modes bypass it).
        public var cdn: String? = HostChecker.appleCDN
        /// Google's Digital Asset Links API endpoint (`DALProbe.google`); nil skips it. Asked
        /// only for a host whose origin has an assetlinks.json (answers other than 404).
        public var dal: String? = nil
        /// curl's connect-to entries for the API's requests (a test server).
        public var dalConnectTo: [String] = []
        /// Google's API key (`DALProbe.keyProblem`), sent as `key=`; never reported.
        public var dalKey: String? = nil
        /// curl's `HOST1:PORT1:HOST2:PORT2` entries for the origin's requests (a staging
        /// address); the CDN is asked where it is (and holds production's copy: `cdn: nil` to
        /// leave it out of a staging check).
        public var connectTo: [String] = []
        /// Only devices in developer or managed mode use this host: they read the origin
        /// directly and accept a certificate no public root signed (spec §2).
        public var developerModeOnly = false
        /// Apps whose entries to report (`--app`, or the entitlements' application identifier).
        public var apps: [String] = []
        /// Which services the app must be listed under on this host (from an entitlements file);
        /// empty: applinks when an app is named.
        public var services: [String] = []
        /// Seconds since the epoch, for the certificate's expiry warning.
        public var now: Int64 = Int64(Date().timeIntervalSince1970)

        public init() {}
    }

    let client: OutboundClient
    let options: Options
    /// The CDN's requests (its own connect-to entries, for a test CDN).
    let cdnConnectTo: [String]

    public init(client: OutboundClient, options: Options, cdnConnectTo: [String] = []) {
        self.client = client
        self.options = options
        self.cdnConnectTo = cdnConnectTo
    }

    /// Checks `host` (a DNS name, no scheme, path or port).
    public func check(_ host: String) -> HostReport {
        var problems: [Problem] = []
        let (origin, body, document) = fetchOrigin(host, &problems)
        let (assetLinks, links) = origin.file.status == nil ? (nil, nil) : fetchAssetLinks(host, &problems)
        let cdn = options.cdn.map { checkCDN($0, host, origin: body, originFailed: problems.contains { $0.severity == .error }, &problems) }
        let dal = assetLinks == nil ? nil : options.dal.map { checkDAL($0, host, served: links, &problems) }
        var apps: [AppReport] = []
        for app in options.apps {
            let report = Self.appReport(app, in: document)
            apps.append(report)
            guard document != nil else { continue }
            let wanted = options.services.isEmpty ? ["applinks"] : options.services
            let missing = wanted.filter { !report.services.contains($0) }
            if !missing.isEmpty {
                problems.append(
                    Problem(
                        "app-missing", "\(app) is not in the file's \(missing.joined(separator: ", ")) list",
                        fix:
                            "add \"\(app)\" to \(missing.map { $0 == "applinks" ? "applinks.details[].appIDs" : "\($0).apps" }.joined(separator: " and ")) in the file this host serves"
                    ))
            } else if wanted.contains("applinks") && report.rules.isEmpty {
                problems.append(
                    Problem(
                        "app-no-paths", .warning, "\(app) is listed in applinks with no component or path: no URL opens it",
                        fix: "give its entry components, e.g. [{\"/\": \"/*\"}]"))
            }
        }
        return HostReport(host: host, origin: origin, assetLinks: assetLinks, cdn: cdn, dal: dal, apps: apps, problems: problems)
    }

    // MARK: - The origin

    /// The AASA file as Apple's CDN asks for it; the body when one was received with status 200,
    /// and the document it holds when valid.
    private func fetchOrigin(_ host: String, _ problems: inout [Problem]) -> (OriginReport, [UInt8]?, AppSiteAssociation?) {
        let url = "https://\(host)/.well-known/apple-app-site-association"
        var file = FileReport(url: url)
        var request = OutboundRequest(url: url)
        request.connectTo = options.connectTo
        request.userAgent = Self.appleUserAgent
        request.wantsCertificate = true
        let response: OutboundResponse
        do {
            response = try client.perform(request)
        } catch {
            file.error = TerminalText.escaped(error.message)
            let certificate = error.certificate.map {
                CertificateReport(
                    names: $0.dnsNames.map(TerminalText.escaped), notBefore: $0.notBefore, notAfter: $0.notAfter, trusted: false)
            }
            // A connection cut for Apple's fetcher alone (a WAF that resets bots) is a block.
            if error.kind == .http || error.kind == .timeout, answersBrowser(request) {
                problems.append(
                    Problem(
                        "blocked-user-agent",
                        "the origin cuts Apple's fetcher off (User-Agent \(Self.appleUserAgent): \(file.error ?? "")) but answers a browser",
                        fix: Self.unblockFix))
                return (OriginReport(file: file, certificate: certificate), nil, nil)
            }
            var problem = Self.transportProblem(error, host: host, what: "the origin")
            if options.developerModeOnly && error.certificateProblem == .untrusted {
                // Developer mode accepts any valid certificate, even one no public root signed.
                problem.severity = .warning
                problem.fix += " (developer-mode devices accept it; no other device will)"
            }
            problems.append(problem)
            return (OriginReport(file: file, certificate: certificate), nil, nil)
        }
        let certificate = response.certificate.map {
            CertificateReport(names: $0.dnsNames.map(TerminalText.escaped), notBefore: $0.notBefore, notAfter: $0.notAfter, trusted: true)
        }
        if let certificate, certificate.notAfter - options.now < Self.expiryWarningSeconds {
            let days = max(0, (certificate.notAfter - options.now) / 86_400)
            problems.append(
                Problem(
                    "certificate-expiring", .warning, "the certificate expires in \(days) day\(days == 1 ? "" : "s")",
                    fix:
                        "renew it now: Apple's CDN and devices refuse an expired certificate, and the CDN keeps the failure for an hour or more"
                ))
        }
        describe(response, into: &file)
        var body: [UInt8]? = nil
        var document: AppSiteAssociation? = nil
        switch response.status {
        case 200:
            body = response.body
            document = checkAASA(response, &file, &problems)
        case 300..<400:
            problems.append(
                Problem(
                    "redirect", "the origin answers \(response.status) to \(file.redirect ?? "nowhere") instead of the file",
                    fix:
                        "serve the file itself at this URL with status 200: Apple's fetcher never follows a redirect (not even http to https or to www)"
                ))
        default:
            // A block of Apple's fetcher looks like any refusal: ask again as a browser.
            if answersBrowser(request) {
                problems.append(
                    Problem(
                        "blocked-user-agent",
                        "the origin answers \(response.status) to Apple's fetcher (User-Agent \(Self.appleUserAgent)) but 200 to a browser",
                        fix: Self.unblockFix))
            } else if response.status == 404 {
                problems.append(
                    Problem(
                        "not-found", "the origin answers 404: there is no file at \(url)",
                        fix:
                            "serve the file at /.well-known/apple-app-site-association (with aasad: sites/\(host)/apple-app-site-association)"
                    ))
            } else {
                problems.append(
                    Problem(
                        "http-status", "the origin answers \(response.status) instead of 200",
                        fix: "make the URL answer 200 with the file to every client, from every region"))
            }
        }
        return (OriginReport(file: file, certificate: certificate), body, document)
    }

    /// What `blocked-user-agent` asks of the operator.
    static let unblockFix =
        "let User-Agents starting with AASA-Bot and CFNetwork through the WAF, bot protection or geo-block in front of the origin"

    /// Whether the origin answers 200 to the same request from a browser's User-Agent.
    private func answersBrowser(_ request: OutboundRequest) -> Bool {
        var retry = request
        retry.userAgent = Self.browserUserAgent
        retry.wantsCertificate = false
        return (try? client.perform(retry))?.status == 200
    }

    /// Status, Content-Type, Location and size of a response (the header values made printable:
    /// they reach a terminal).
    private func describe(_ response: OutboundResponse, into file: inout FileReport) {
        file.status = response.status
        file.contentType = response.headers.first("content-type").map { TerminalText.escaped(utf8: Array($0.prefix(256))) }
        if (300..<400).contains(response.status) {
            file.redirect = response.headers.first("location").map { TerminalText.escaped(utf8: Array($0.prefix(2_048))) }
        }
        file.size = response.body.count
    }

    /// A 200 answer's type, size and content; the document when the file is valid.
    private func checkAASA(_ response: OutboundResponse, _ file: inout FileReport, _ problems: inout [Problem]) -> AppSiteAssociation? {
        if !Self.isJSONType(file.contentType) {
            problems.append(
                Problem(
                    "content-type", "the file is served as \(file.contentType ?? "no Content-Type"), not application/json",
                    fix:
                        "serve it with Content-Type: application/json (a file without extension often gets application/octet-stream or text/html)"
                ))
        }
        if response.body.count > AppSiteAssociation.maximumFileSize {
            problems.append(
                Problem(
                    "too-large", "the file is \(response.body.count) bytes; Apple ignores files over 128 KB",
                    fix: "shorten it: use components with wildcards, or substitution variables, instead of one entry per path"))
        }
        let result = AppSiteAssociation.validate(response.body)
        file.valid = result.isValid
        file.errors = result.diagnostics.errors.map(\.description)
        if !result.isValid {
            let code = Self.isJSON(response.body) ? "invalid" : "invalid-json"
            problems.append(
                Problem(
                    code,
                    "the file is not a valid apple-app-site-association file (\(file.errors.count) error\(file.errors.count == 1 ? "" : "s"))\(file.errors.first.map { ": \($0)" } ?? "")",
                    fix: "fix it and check it with 'aasad validate FILE' before deploying; devices ignore the whole file"))
        }
        return result.isValid ? result.document : nil
    }

    /// `application/json`, with any parameters.
    static func isJSONType(_ value: String?) -> Bool {
        guard let value else { return false }
        let type = value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return type == "application/json"
    }

    static func isJSON(_ bytes: [UInt8]) -> Bool { (try? JSONParser.parse(bytes)) != nil }

    /// `/.well-known/assetlinks.json`: nil when the origin has none (404); with the file's
    /// statements when it is valid.
    private func fetchAssetLinks(_ host: String, _ problems: inout [Problem]) -> (FileReport?, AssetLinks?) {
        let url = "https://\(host)/.well-known/assetlinks.json"
        var file = FileReport(url: url)
        var request = OutboundRequest(url: url)
        request.connectTo = options.connectTo
        let response: OutboundResponse
        do {
            response = try client.perform(request)
        } catch {
            file.error = TerminalText.escaped(error.message)
            problems.append(
                Problem(
                    "assetlinks-unreachable", .warning, "assetlinks.json could not be read: \(file.error ?? "")",
                    fix: "serve /.well-known/assetlinks.json as reliably as the AASA file (or 404 when the site has no Android app)"))
            return (file, nil)
        }
        if response.status == 404 { return (nil, nil) }
        describe(response, into: &file)
        var document: AssetLinks? = nil
        switch response.status {
        case 200:
            let result = AssetLinks.validate(response.body)
            document = result.isValid ? result.document : nil
            file.valid = result.isValid
            file.errors = result.diagnostics.errors.map(\.description)
            if !result.isValid {
                problems.append(
                    Problem(
                        "assetlinks-invalid",
                        "assetlinks.json is not a valid Digital Asset Links file\(file.errors.first.map { ": \($0)" } ?? "")",
                        fix: "fix it and check it with 'aasad validate FILE'; Android verifies no link of the app with it"))
            }
            if !Self.isJSONType(file.contentType) {
                problems.append(
                    Problem(
                        "assetlinks-content-type",
                        "assetlinks.json is served as \(file.contentType ?? "no Content-Type"), not application/json",
                        fix: "serve it with Content-Type: application/json"))
            }
        case 300..<400:
            problems.append(
                Problem(
                    "assetlinks-redirect", "assetlinks.json answers \(response.status) to \(file.redirect ?? "nowhere")",
                    fix: "serve the file itself with status 200: Android's verifier does not follow redirects"))
        default:
            problems.append(
                Problem(
                    "assetlinks-status", .warning, "assetlinks.json answers \(response.status)",
                    fix: "serve it with status 200, or 404 when the site has no Android app"))
        }
        return (file, document)
    }

    // MARK: - Google's Digital Asset Links API

    /// What Google's API lists for `host` against the served file's apps (`served`: nil when the
    /// origin's file could not be read or is invalid, whose own problem then says why).
    private func checkDAL(_ base: String, _ host: String, served document: AssetLinks?, _ problems: inout [Problem]) -> DALReport {
        let probe = DALProbe(client: client, base: base, connectTo: options.dalConnectTo, key: options.dalKey)
        let (status, result) = probe.observe(host)
        let served = document.map(DALListing.served) ?? (apps: [], includes: false)
        let comparison = DALComparison(status: status, result: result, served: served.apps)
        var report = comparison.report(url: probe.url(host))
        switch report.state {
        case .current:
            break
        case .stale:
            let differences =
                (report.onlyAtGoogle.isEmpty ? "" : "; only at Google: " + report.onlyAtGoogle.map(\.description).joined(separator: ", "))
                + (report.onlyServed.isEmpty
                    ? "" : "; only in the served file: " + report.onlyServed.map(\.description).joined(separator: ", "))
            if DALComparison.mayComeFromIncludes(listed: Set(report.listed), served: served) {
                // Google follows "include" statements, which this check does not fetch: apps only
                // at Google may come from an included list.
                problems.append(
                    Problem(
                        "dal-include", .warning,
                        "Google's Digital Asset Links API lists apps the origin's assetlinks.json does not name itself\(differences)",
                        fix:
                            "check that they come from the lists the file includes; if not, Google's copy is older: wait for its maxAge, then check again"
                    ))
            } else {
                problems.append(
                    Problem(
                        "dal-stale", "Google's Digital Asset Links API lists other apps than the origin's assetlinks.json\(differences)",
                        fix:
                            "Google keeps its copy for its maxAge\(report.maxAge.map { " (\($0))" } ?? ""): check again after it; if the difference stays, make sure Google's fetcher gets the file (status 200, application/json, no redirect, no WAF block)"
                    ))
            }
        case .missing:
            // Nothing served to compare with: the origin's own problem says why.
            if document != nil && !served.apps.isEmpty {
                problems.append(
                    Problem(
                        "dal-missing", "Google's Digital Asset Links API lists no app for https://\(host)",
                        fix:
                            "Google could not read or accept the file (its debugString says why); serve it with status 200 and application/json, without a redirect, then check again after the maxAge"
                    ))
            }
        case .error:
            report.error = report.error ?? "unknown"
            problems.append(
                Problem(
                    "dal-error", "Google's Digital Asset Links API could not be used: \(report.error ?? "")",
                    fix: status == 429
                        ? "the API's quota is used up: check again later, or fewer hosts at once"
                        : status == nil
                            ? "check this machine's access to \(base) (a proxy, DNS), then check again; on a machine that cannot reach Google, give --dal none"
                            : status == 400 || status == 403
                                ? "the API refused the request: check the key given with --dal-key (or AASAD_DAL_KEY) and that the Digital Asset Links API is enabled for it"
                                : "check again later; if it persists, check the URL given with --dal"))
        }
        return report
    }

    // MARK: - Apple's CDN

    private func checkCDN(_ base: String, _ host: String, origin: [UInt8]?, originFailed: Bool, _ problems: inout [Problem]) -> CDNReport {
        let probe = CDNProbe(client: client, base: base, connectTo: cdnConnectTo)
        let observation = probe.observe(host)
        let state = observation.state(against: origin.flatMap(JSONComparison.digest))
        let report = CDNReport(
            url: base + host, state: state, status: observation.status, failureReason: observation.failureReason,
            error: observation.error.map(TerminalText.escaped))
        let reason = observation.failureReason.map { " (\($0))" } ?? ""
        switch state {
        case .current:
            break
        case .stale where origin == nil:
            // Nothing to compare: the origin's own problem says why.
            if !originFailed {
                problems.append(
                    Problem("cdn-stale", "Apple's CDN holds a file, but the origin served none", fix: "see the origin's answer above"))
            }
        case .stale:
            problems.append(
                Problem(
                    "cdn-stale", "Apple's CDN holds another version of the file than the origin serves",
                    fix:
                        "wait: the CDN fetches again within about a day of a change; devices keep the old rules until then. aasad serve's /sites shows when AASA-Bot last fetched"
                ))
        case .missing:
            problems.append(
                Problem(
                    "cdn-missing", "Apple's CDN has no copy\(reason)",
                    fix: observation.failureReason == nil
                        ? "make sure the origin answers Apple's fetcher with the file; the CDN fetches a new domain within about a day"
                        : "fix what the CDN's failure reason says; it keeps a failure for an hour or more, then fetches again"))
        case .error:
            if observation.status == nil {
                problems.append(
                    Problem(
                        "cdn-error", "Apple's CDN could not be asked: \(report.error ?? "")",
                        fix: "check this machine's access to \(base) (a proxy, DNS), then check again"))
            } else {
                problems.append(
                    Problem(
                        "cdn-error", "Apple's CDN answered \(observation.status ?? 0)\(reason)",
                        fix: "check again later; if it persists, the CDN cannot read the origin's file"))
            }
        }
        return report
    }

    // MARK: - Apps

    /// Where `app` appears in a file, and the applinks rules of its entries.
    public static func appReport(_ app: String, in document: AppSiteAssociation?) -> AppReport {
        var services: [String] = []
        var rules: [String] = []
        if let document {
            if let links = document.applinks {
                let entries = links.details.filter { $0.apps.contains(app) }
                if !entries.isEmpty || (links.apps ?? []).contains(app) { services.append("applinks") }
                for entry in entries {
                    if entry.components != nil {
                        rules += entry.effectiveComponents.map(\.jsonText)
                    } else {
                        rules += (entry.paths ?? []).map(JSONValue.quote)
                    }
                }
            }
            for (name, list) in [
                ("webcredentials", document.webcredentials), ("appclips", document.appclips),
                ("activitycontinuation", document.activitycontinuation),
            ] where list?.apps.contains(app) == true {
                services.append(name)
            }
        }
        return AppReport(appID: app, services: services, rules: rules)
    }

    // MARK: - Failures

    /// A request that got no response, as a problem with what to do.
    static func transportProblem(_ error: OutboundError, host: String, what: String) -> Problem {
        switch error.kind {
        case .dns:
            return Problem(
                "dns", "\(host) does not resolve: \(TerminalText.escaped(error.message))", fix: "publish an A or AAAA record for \(host)")
        case .connect:
            return Problem(
                "connect", "no TCP connection to \(what): \(TerminalText.escaped(error.message))",
                fix: "make port 443 reachable from the internet (firewall, load balancer)")
        case .timeout:
            return Problem(
                "timeout", "\(what) did not answer in time: \(TerminalText.escaped(error.message))",
                fix: "Apple's fetcher gives up after a few seconds: make the file fast to serve from every region")
        case .tls:
            return Problem(
                "tls", "the TLS handshake with \(what) failed: \(TerminalText.escaped(error.message))",
                fix: "offer TLS 1.2 or 1.3 with a modern cipher suite and the right certificate for \(host) (SNI)")
        case .certificate:
            switch error.certificateProblem {
            case .expired:
                return Problem(
                    "certificate-expired", "the certificate of \(what) has expired",
                    fix: "renew it: Apple's fetcher refuses an expired certificate")
            case .notYetValid:
                return Problem(
                    "certificate-not-yet-valid", "the certificate of \(what) is not valid yet",
                    fix: "check its dates and the server's clock")
            case .nameMismatch:
                return Problem(
                    "certificate-name-mismatch", "the certificate of \(what) does not name \(host)",
                    fix:
                        "serve a certificate whose subjectAltName covers \(host) (check SNI: a default certificate for another site is a common cause)"
                )
            case .untrusted, nil:
                return Problem(
                    "certificate-untrusted", "the certificate of \(what) is not trusted: \(TerminalText.escaped(error.message))",
                    fix: "serve the full chain (leaf and intermediates) from a public CA; Apple's fetcher accepts no private root")
            }
        case .tooLarge:
            return Problem(
                "too-large", "\(what) sent more than a file may hold: \(TerminalText.escaped(error.message))",
                fix: "keep the file under 128 KB")
        case .http, .request:
            return Problem(
                "http", "\(what) could not be read: \(TerminalText.escaped(error.message))",
                fix: "check that \(host) serves HTTPS on port 443 and that nothing in front of it (a WAF, a proxy) cuts the connection")
        }
    }
}
