import ACME
import Check
import Foundation
import HTTPCore
import HTTPServer
import SafeText
import Served
import SiteStore
import TLS

/// One status page being written: the overview or a site's page. Text the page did not write
/// itself goes through `text(_:)` (`HTMLText.escaped`), URLs' values through
/// `HTMLText.queryValue`; `raw(_:)` takes only the page's own markup.
///
/// Over 400 lines: the overview and the site's page share their cells and escaping, and keeping
/// the markup in one file keeps every place a value is written in one reading.
struct StatusHTML {
    let now: Int64
    /// The view a page's rows are read from (the current one, whatever the index's age) and
    /// where each name's state is looked up.
    let view: AdminView
    let lookups: StatusLookups
    private var body: [UInt8] = []
    /// Set once the body reached `StatusPages.maximumBodyBytes`: nothing more is added.
    private(set) var cut = false

    init(now: Int64, view: AdminView, lookups: StatusLookups) {
        self.now = now
        self.view = view
        self.lookups = lookups
        body.reserveCapacity(64 << 10)
    }

    // MARK: writing

    private mutating func raw(_ markup: String) {
        guard !cut else { return }
        guard body.count + markup.utf8.count <= StatusPages.maximumBodyBytes else {
            cut = true
            return
        }
        body += Array(markup.utf8)
    }

    private mutating func text(_ value: String) { raw(HTMLText.escaped(value)) }

    /// A value as it is, for a quoted attribute: `& < > " '` as references, nothing else
    /// changed (`HTMLText.attribute`).
    private mutating func attribute(_ value: String) { raw(HTMLText.attribute(value)) }

    private mutating func cell(_ value: String, class name: String? = nil) {
        raw(name.map { "<td class=\"\($0)\">" } ?? "<td>")
        text(value)
        raw("</td>")
    }

    /// A link to a site's page, its name as text.
    private mutating func siteLink(_ directory: String) {
        raw("<a href=\"/?site=\(HTMLText.queryValue(directory))\">")
        text(directory)
        raw("</a>")
    }

    /// Up to `limit` items, one a line, then how many more.
    private mutating func list(_ items: [String], limit: Int) {
        for (k, item) in items.prefix(limit).enumerated() {
            if k > 0 { raw("<br>") }
            text(item)
        }
        if items.count > limit { raw("<br><span class=\"muted\">and \(items.count - limit) more</span>") }
    }

    private mutating func head(title: String) {
        raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">")
        raw("<title>")
        text(title)
        raw("</title><style>\(StatusPages.style)</style></head><body>")
    }

    /// The body, closed, with a note when it was cut.
    mutating func finish() -> [UInt8] {
        var tail = ""
        if cut { tail += "<p class=\"reason\">This page reached its size bound and was cut.</p>" }
        tail += "<script>\(StatusPages.script)</script></body></html>"
        return body + Array(tail.utf8)
    }

    // MARK: the overview

    /// The overview from `index` (nil: none built yet), which is `current` when built from the
    /// sources as they are now.
    mutating func overview(index: StatusIndex?, current: Bool, query: Query) {
        head(title: "aasad status")
        raw("<header><h1>aasad status</h1><p class=\"summary\">")
        raw("<span>\(view.count) sites</span>")
        guard let index else {
            // No index yet: a page that reloads itself soon (a meta refresh is no script, so the
            // Content-Security-Policy needs no change).
            raw("</p><p id=\"index-age\">The index of the sites is being built; this page reloads itself.</p></header>")
            raw("<meta http-equiv=\"refresh\" content=\"2\">")
            return
        }
        raw("<span id=\"problem-count\">\(index.problems.count) need attention</span>")
        let reloads = view.reloads
        raw(
            "<span>\(reloads.reloads) reloads, \(reloads.failures) refused something\(reloads.lastSuccessful ? "" : ", the last one too")</span>"
        )
        raw("<span class=\"muted\">as of ")
        text(time(now))
        raw("</span></p>")
        // How old the list and the problems are: the rows below read the sites as they are now.
        raw("<p id=\"index-age\" class=\"muted\">Problems and order as of reload \(index.generation), indexed ")
        text(time(index.builtAtWall))
        raw(" in \(Int(index.cost * 1000)) ms\(current ? "" : "; a newer index is being built").</p>")
        if index.counts.contains(where: { $0 > 0 }) {
            raw("<p class=\"summary\">")
            for kind in StatusIndex.Kind.allCases {
                let count = index.counts[kind.rawValue]
                guard count > 0 else { continue }
                raw("<span class=\"reason\">")
                text(kind.label)
                raw(": \(count)</span> ")
            }
            raw("</p>")
        }
        raw("</header>")
        problems(index: index, cursor: query["problems-after"])
        sites(index: index, search: query["q"] ?? "", after: query["after"])
    }

    /// The problem section: `rowsPerPage` problems from the cursor ("rank:directory").
    private mutating func problems(index: StatusIndex, cursor: String?) {
        raw("<section id=\"problems\"><h2>Needs attention (\(index.problems.count))</h2>")
        guard !index.problems.isEmpty else {
            raw("<p>Nothing: every site is served, certified and current.</p></section>")
            return
        }
        var start = 0
        if let cursor, let colon = cursor.firstIndex(of: ":"), let rank = Int(cursor[..<colon]),
            let kind = StatusIndex.Kind(rawValue: rank)
        {
            start = index.problemIndex(after: (kind, String(cursor[cursor.index(after: colon)...])))
        }
        raw("<table><thead><tr><th>Site</th><th>Problem</th><th>Detail</th></tr></thead><tbody>")
        let shown = index.problems[start...].prefix(StatusPages.rowsPerPage)
        for problem in shown {
            // Removed since the index was built: its row would say nothing.
            guard let entry = view[problem.directory] else { continue }
            let status = Self.status(entry)
            let severe = problem.worst <= .certificateExpiring
            raw("<tr class=\"problem \(severe ? "bad" : "warn")\"><td class=\"name\">")
            siteLink(problem.directory)
            raw("</td><td class=\"reason\">")
            list(problem.kinds.sorted.map(\.label), limit: StatusIndex.Kind.allCases.count)
            raw("</td><td>")
            list(details(problem.kinds, directory: problem.directory, entry: entry, status: status), limit: StatusPages.itemsPerCell)
            raw("</td></tr>")
        }
        raw("</tbody></table>")
        if let last = shown.last, start + shown.count < index.problems.count {
            let cursor = "\(last.worst.rawValue):\(last.directory)"
            raw("<p><a id=\"more-problems\" href=\"/?problems-after=\(HTMLText.queryValue(cursor))\">More problems</a></p>")
        }
        raw("</section>")
    }

    /// What explains each problem, one line each: the error, since when, what the CA or the CDN said.
    private func details(_ kinds: StatusIndex.Kinds, directory: String, entry: AdminView.Entry, status: SiteStatus?) -> [String] {
        var lines: [String] = []
        for kind in kinds.sorted {
            switch kind {
            case .refused, .fileRefused:
                lines += status?.errors ?? []
                if kind == .fileRefused, let loaded = status?.loadedAt { lines.append("serving the version loaded \(time(loaded))") }
            case .certificateFailed, .certificateExpiring:
                for host in entry.hosts {
                    guard let state = lookups.acme?(host) else { continue }
                    if kind == .certificateFailed, state.state == .failed {
                        lines.append(
                            "\(host): \(state.error ?? "order failed")" + (state.nextAttempt.map { ", next attempt \(time($0))" } ?? ""))
                    }
                    if kind == .certificateExpiring, let notAfter = state.notAfter, notAfter - now < StatusIndex.expiringWithin {
                        lines.append("\(host): ends \(time(notAfter))")
                    }
                }
            case .cdnMissing, .cdnStale, .cdnError, .dalMissing, .dalStale, .dalError:
                let google = kind == .dalMissing || kind == .dalStale || kind == .dalError
                if let state = (google ? lookups.dal : lookups.cdn)?(directory, entry.hosts) {
                    var line = "\(google ? "Google: " : "")\(state.host): \(state.state.rawValue) since \(time(state.since))"
                    if let reason = state.failureReason ?? state.error { line += ": \(reason)" }
                    lines.append(line)
                }
            case .namesRefused:
                lines += (status?.refusedHosts ?? []).map { "\($0.host): \($0.reason)" }
            case .unverified:
                let waiting = entry.hosts.filter { lookups.verification?($0) == false }
                lines.append("waiting for the ownership check: " + waiting.prefix(StatusPages.itemsPerCell).joined(separator: ", "))
            }
        }
        return lines
    }

    /// The site list: `rowsPerPage` sites after `after` whose directory or a host contains
    /// `search`, comparing `searchBudget` names at most.
    private mutating func sites(index: StatusIndex, search: String, after: String?) {
        raw("<section id=\"sites\"><h2>All sites (\(index.sorted.count))</h2>")
        // The field holds the query as it was typed: the raw value, only its attribute-ending
        // characters as references, so that `<script>` or `&amp;` typed shows as typed and a
        // search sent again is the same search. (`text` would show controls and bidi overrides
        // as visible escapes, a value the user never typed; in a form field such a character
        // reorders the field's own text only, and every other place shows the query escaped.)
        raw("<form method=\"get\" action=\"/\"><input type=\"search\" name=\"q\" placeholder=\"host contains\" value=\"")
        attribute(search)
        raw("\"> <button type=\"submit\">Search</button></form>")
        raw("<table><thead><tr><th>Site</th><th>Hosts</th><th>State</th><th>Files served</th><th>Certificate</th><th>Apple CDN</th>")
        raw("<th>Apple fetches</th><th>Fallback</th></tr></thead><tbody>")
        var position =
            after.map { name in
                // After the cursor: the first name above it (it may have been removed since).
                var at = StatusIndex.lowerBound(index.sorted, name)
                if at < index.sorted.count, index.sorted[at] == name { at += 1 }
                return at
            } ?? 0
        let needle = search.lowercased()
        var shown = 0
        // Names compared: each site searched counts its directory and every host.
        var compared = 0
        var stopped = false
        var last: String?
        while position < index.sorted.count, shown < StatusPages.rowsPerPage {
            let directory = index.sorted[position]
            // Removed since the index was built: a look-up each, counted as a name compared,
            // so that a page after a bulk removal stops at the budget too.
            guard let entry = view[directory] else {
                compared += 1
                position += 1
                last = directory
                if compared >= StatusPages.searchBudget {
                    stopped = true
                    break
                }
                continue
            }
            if !needle.isEmpty {
                let cost = 1 + entry.hosts.count
                // The first site a request looks at is searched whatever its size: each request
                // gets on.
                guard compared == 0 || compared + cost <= StatusPages.searchBudget else {
                    stopped = true
                    break
                }
                compared += cost
            }
            position += 1
            last = directory
            if !needle.isEmpty, !directory.contains(needle), !entry.hosts.contains(where: { $0.contains(needle) }) { continue }
            row(directory, entry: entry)
            shown += 1
        }
        raw("</tbody></table>")
        if shown == 0 { raw("<p class=\"muted\">No site matches.</p>") }
        if position < index.sorted.count, let last {
            if stopped {
                raw("<p class=\"muted\">Searched up to ")
                text(last)
                raw(".</p>")
            }
            var link = "/?after=\(HTMLText.queryValue(last))"
            if !search.isEmpty { link += "&amp;q=\(HTMLText.queryValue(search))" }
            raw("<p><a id=\"next\" href=\"\(link)\">\(stopped ? "Search on" : "Next page")</a></p>")
        }
        raw("</section>")
    }

    private mutating func row(_ directory: String, entry: AdminView.Entry) {
        let status = Self.status(entry)
        raw("<tr class=\"site\"><td class=\"name\">")
        siteLink(directory)
        raw("</td><td>")
        list(entry.hosts, limit: StatusPages.itemsPerCell)
        raw("</td>")
        cell(entry.state.rawValue)
        raw("<td>")
        let files = Self.files(entry)
        if files.isEmpty {
            raw("<span class=\"muted\">none</span>")
        } else {
            list(files.map { "\($0.name) \($0.etag), \($0.size) bytes" }, limit: 2)
            if let loaded = entry.served?.loadedAt ?? status?.loadedAt {
                raw("<br>since ")
                text(time(loaded))
            }
        }
        raw("</td>")
        cell(certificate(entry))
        cell(
            lookups.cdn?(directory, entry.hosts).map { "\($0.state.rawValue) since \(time($0.since))" }
                ?? (lookups.cdn == nil ? "not watched" : "not asked yet"))
        cell(fetches(lookups.fetches(directory)))
        cell(fallback(entry))
        raw("</tr>")
    }

    // MARK: a site's page

    /// One site's page; false when there is no such site.
    mutating func site(_ directory: String) -> Bool {
        guard let entry = view[directory] else { return false }
        let status = Self.status(entry)
        head(title: "aasad: " + directory)
        raw("<p><a href=\"/\">All sites</a></p><h1 id=\"site\">")
        text(directory)
        raw("</h1><table class=\"detail\"><tbody>")
        func line(_ page: inout StatusHTML, _ name: String, _ values: [String]) {
            page.raw("<tr><th>\(name)</th><td>")
            page.list(values, limit: StatusPages.detailItems)
            page.raw("</td></tr>")
        }
        let kinds = StatusIndex.kinds(entry, directory: directory, lookups: lookups, now: now)
        line(&self, "Problems", kinds.isEmpty ? ["none"] : kinds.sorted.map(\.label))
        line(&self, "State", [entry.state.rawValue])
        line(&self, "Hosts", entry.hosts)
        let files = Self.files(entry).map { "\($0.name): ETag \($0.etag), \($0.size) bytes, modified \(time($0.modified))" }
        line(&self, "Files served", files.isEmpty ? ["none"] : files + [entry.served.map { "loaded \(time($0.loadedAt))" } ?? ""])
        var certificates = [certificate(entry)]
        for host in entry.hosts {
            guard let state = lookups.acme?(host) else { continue }
            var text = "\(host): \(state.state.rawValue)"
            if let notAfter = state.notAfter { text += ", not after \(time(notAfter))" }
            if let renewAt = state.renewAt { text += ", renews \(time(renewAt))" }
            if let error = state.error { text += ", error: \(error)" }
            if let next = state.nextAttempt { text += ", next attempt \(time(next))" }
            certificates.append(text)
        }
        line(&self, "Certificate", certificates)
        if let cdn = lookups.cdn?(directory, entry.hosts) {
            var text = "\(cdn.host): \(cdn.state.rawValue) since \(time(cdn.since)), asked \(time(cdn.checkedAt))"
            if let code = cdn.status { text += ", status \(code)" }
            line(&self, "Apple CDN", [text] + [cdn.failureReason, cdn.error].compactMap { $0 })
        } else {
            line(&self, "Apple CDN", [lookups.cdn == nil ? "not watched" : "not asked yet"])
        }
        if let dal = lookups.dal?(directory, entry.hosts) {
            var text = "\(dal.host): \(dal.state.rawValue) since \(time(dal.since)), asked \(time(dal.checkedAt))"
            if let code = dal.status { text += ", status \(code)" }
            line(&self, "Google DAL", [text] + [dal.failureReason, dal.error].compactMap { $0 })
        } else if lookups.dal != nil {
            line(&self, "Google DAL", ["not asked yet (or no assetlinks.json giving an app handle_all_urls)"])
        }
        if let verification = lookups.verification {
            line(
                &self, "Ownership check",
                entry.hosts.compactMap { host in verification(host).map { "\(host): \($0 ? "verified" : "unverified")" } })
        }
        line(&self, "Apple fetches", [fetches(lookups.fetches(directory))])
        line(&self, "Fallback answers", [fallback(entry)])
        line(&self, "Last problems", status?.errors.isEmpty == false ? status?.errors ?? [] : ["none"])
        line(&self, "Names refused", (status?.refusedHosts ?? []).map { "\($0.host): \($0.reason)" })
        raw("</tbody></table>")
        return true
    }

    // MARK: values

    /// A site's status, as `/sites` shows it.
    static func status(_ entry: AdminView.Entry) -> SiteStatus? { entry.status }

    /// The files a site serves: name, ETag, size and modification time.
    static func files(_ entry: AdminView.Entry) -> [(name: String, etag: String, size: Int, modified: Int64)] {
        guard let served = entry.served else { return [] }
        var files: [(name: String, etag: String, size: Int, modified: Int64)] = []
        if let aasa = served.aasa { files.append((ConfigLoader.aasaFileName, aasa.etag, aasa.body.count, aasa.lastModified)) }
        if let links = served.assetLinks {
            files.append((ConfigLoader.assetLinksFileName, links.etag, links.body.count, links.lastModified))
        }
        return files
    }

    private func certificate(_ entry: AdminView.Entry) -> String {
        guard let own = entry.ownCertificate else { return "none (not served)" }
        if own {
            // The site's own pair: its leaf read here, for the page's rows only.
            guard let pem = entry.served?.certificate?.chainPEM, let info = try? CertificateInfo(leafPEM: pem) else {
                return "the site's own (tls/)"
            }
            return "the site's own (tls/), issuer \(info.issuer), not after \(time(info.notAfter))"
        }
        let automatic = entry.hosts.compactMap { lookups.acme?($0) }
        if !automatic.isEmpty {
            let ends = automatic.compactMap(\.notAfter).min()
            return "ACME: " + Set(automatic.map(\.state.rawValue)).sorted().joined(separator: ", ")
                + (ends.map { ", not after \(time($0))" } ?? "")
        }
        switch view.sharedCertificate {
        case .default: return "the default (tls/)"
        case .development: return "development"
        case .otherSite: return "another site's"
        case .site: return "the site's own (tls/)"
        }
    }

    private func fetches(_ fetches: FetchLog.SiteFetches?) -> String {
        guard let fetches else { return "none since start" }
        return "\(fetches.count) (\(fetches.countFromAppleNetwork) from Apple's network), last \(time(fetches.last))"
    }

    private func fallback(_ entry: AdminView.Entry) -> String {
        guard let counts = entry.fallbackCounts else { return "no fallback" }
        return ClientPlatform.allCases.map { "\($0.label) \(counts.value($0))" }.joined(separator: ", ")
    }

    /// `2026-11-27 03:50:00Z (2 h ago)`.
    func time(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "\(seconds)" }
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let date =
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
        let delta = now - seconds
        let magnitude = delta.magnitude
        let amount =
            magnitude < 120
            ? "\(magnitude) s"
            : magnitude < 7200 ? "\(magnitude / 60) min" : magnitude < 172_800 ? "\(magnitude / 3600) h" : "\(magnitude / 86_400) d"
        return date + (delta >= 0 ? " (\(amount) ago)" : " (in \(amount))")
    }
}
