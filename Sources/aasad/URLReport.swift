import AASA
import Daemon
import SiteStore

/// The answer for one URL in the shape `match --format json` prints. A stable interface for
/// scripts: `url`, `appID` (null when no app opens it), `decidedBy` (null likewise) and `apps` are
/// always present; fields are only ever added.
struct URLReport: Encodable {
    struct Reference: Encodable {
        /// Index of the `details` entry.
        var detail: Int
        /// Index of the pattern within the entry's list.
        var pattern: Int
        /// `components` or `paths`.
        var source: String
        /// JSON path of the pattern, e.g. `applinks.details[0].components[1]`.
        var path: String
        /// The pattern as written: the component as JSON, or the legacy path string quoted.
        var rule: String
        /// True when the pattern excludes (an `exclude` component or a `NOT` path).
        var exclude: Bool

        init(_ r: MatchResult.Reference, exclude: Bool) {
            detail = r.detail
            pattern = r.pattern
            source = r.source.rawValue
            path = r.path.description
            rule = r.rule
            self.exclude = exclude
        }

        var text: String { "\(path) \(rule)" }
    }

    struct App: Encodable {
        var appID: String
        /// `match`, `block` or `none`.
        var decision: String
        var decidedBy: Reference?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(appID, forKey: .appID)
            try c.encode(decision, forKey: .decision)
            try c.encode(decidedBy, forKey: .decidedBy)
        }

        enum CodingKeys: String, CodingKey { case appID, decision, decidedBy }
    }

    var url: String
    var site: String?
    var appID: String?
    var decidedBy: Reference?
    var apps: [App] = []
    var hasAppLinks = true
    var error: String?
    var findings: [ValidationReport.Finding] = []
    /// Set with --config for a site with a fallback or page.
    var browser: [BrowserAnswer]?

    init(url: String, site: String? = nil, error: String, findings: [ValidationReport.Finding] = []) {
        self.url = url
        self.site = site
        self.error = error
        self.findings = findings
    }

    init(_ text: String, _ result: MatchResult, site: String?, services: AppSiteAssociation) {
        url = text
        self.site = site
        hasAppLinks = services.applinks != nil
        appID = result.opener?.appID
        decidedBy = result.opener?.decidedBy.map { Reference($0, exclude: false) }
        apps = result.apps.map { app in
            App(
                appID: app.appID, decision: app.decision.rawValue,
                decidedBy: app.decidedBy.map { Reference($0, exclude: app.decision == .block) })
        }
    }

    enum CodingKeys: String, CodingKey { case url, site, appID, decidedBy, apps, error, findings, browser }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(url, forKey: .url)
        try c.encodeIfPresent(site, forKey: .site)
        try c.encode(appID, forKey: .appID)
        try c.encode(decidedBy, forKey: .decidedBy)
        try c.encode(apps, forKey: .apps)
        try c.encodeIfPresent(error, forKey: .error)
        if !findings.isEmpty { try c.encode(findings, forKey: .findings) }
        try c.encodeIfPresent(browser, forKey: .browser)
    }

    /// The URL, the verdict, then one readable line per app. Each line is escaped whole
    /// (`TerminalText`): the URL argument, the file's rules and app IDs, and what a site's files
    /// say are shown, never obeyed, by the terminal.
    func printText() {
        show(url)
        if let error {
            show("  error: \(error)")
            for f in findings {
                show("    \(f.path.map { "\($0): " } ?? "")\(f.value.map { "\($0) — " } ?? "")\(f.message)")
            }
            return
        }
        guard hasAppLinks else {
            show("  opens no app: the file has no \"applinks\" service")
            return
        }
        if let appID, let decidedBy {
            show("  opens \(appID) — \(decidedBy.text)")
        } else if apps.contains(where: { $0.decision == "block" }) {
            show("  opens no app: excluded (see the blocked apps below)")
        } else {
            show("  opens no app: no pattern matched")
        }
        for app in apps {
            switch app.decision {
            case "match": show("  \(app.appID): matched by \(app.decidedBy?.text ?? "")")
            case "block": show("  \(app.appID): blocked by \(app.decidedBy?.text ?? "")")
            default: show("  \(app.appID): no match")
            }
        }
        // Without the app (not installed, or no app opens it): what serve answers a browser.
        for answer in browser ?? [] {
            let what = answer.location ?? (answer.page == true ? "the page " + (answer.pageFile ?? "") : "")
            let by = answer.route.map { " (routes[\($0)]: \(answer.routePath ?? ""))" } ?? (answer.status == 404 ? "" : " (fallback)")
            let cut =
                answer.routeWalkCut == true
                ? "; the route walk was cut by the work budget (PreparedRoutes.maximumWork): later routes were not tried" : ""
            show("  in a browser on \(answer.platform): \(answer.status)\(what.isEmpty ? "" : " \(what)")\(by)\(cut)")
        }
    }

    private func show(_ line: String) {
        print(TerminalText.escaped(line))
    }
}
