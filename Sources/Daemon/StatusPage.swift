import ACME
import Check
import Foundation
import HTTPCore
import HTTPServer
import Hashing
import SafeText
import SiteStore
import Synchronization

/// The admin listener's status page: `/` lists the sites with a problem first (a refused file, a
/// failing or expiring certificate, Apple's CDN without the served file, names refused by the
/// ownership rule, names waiting for their ownership check), worst first, then every site,
/// searchable (`q`) and paged (`after`); `/?site=DIR` shows one site in detail.
///
/// Server-rendered HTML on the admin worker's thread (never a serving one), from the same view
/// `/sites` reads. No external asset and no script but a constant auto-refresh one; the
/// Content-Security-Policy allows only that script and the page's style, by their SHA-256 (CSP
/// Level 3 §8.4), so markup that got into a value could not run anything either. Every value that
/// came from a file, a directory name, a CA or a client goes through `HTMLText.escaped`.
///
/// Bounded: a page has at most `rowsPerPage` rows a section, every value at most
/// `HTMLText.maximumScalars`, every list in a row at most `itemsPerCell` items, and the whole
/// body stops growing at `maximumBodyBytes`.
final class StatusPages: Sendable {
    /// Rows in each section of a page: a screenful or two to scan, small enough to render in
    /// milliseconds whatever the number of sites.
    static let rowsPerPage = 100
    /// Hosts, errors or names shown in one cell of a list row (then "and N more"): a site may
    /// have thousands of aliases; its own page shows `detailItems`.
    static let itemsPerCell = 5
    /// Items of each list on a site's page.
    static let detailItems = 100
    /// Sites looked at per search request: a substring search of 1,000,000 names goes on from
    /// where the last page stopped instead of walking them all at once (about 20 ms a request).
    static let searchBudget = 100_000
    /// A body stops at this size with a note: with the bounds above a page is far smaller; this
    /// holds whatever a future column adds.
    static let maximumBodyBytes = 4 << 20
    /// Longest decoded query value read (a directory name is at most 255 bytes); a longer one is
    /// refused with 400.
    static let maximumQueryValue = 1024
    /// The index is built again, when a source changed, only once this many times its last build
    /// time has passed: at 1,000,000 sites a build of a second leaves the admin thread free
    /// nine tenths of the time, and a small config is always current.
    static let refreshCostShare = 10.0
    /// Seconds between automatic reloads of the page by its script.
    static let refreshSeconds = 30

    private let index = Mutex<StatusIndex?>(nil)

    init() {}

    /// The index, built again when a source changed (and its cost share allows).
    func current(_ sources: AdminPages) -> StatusIndex {
        let view = sources.sites.current
        let acme = sources.acme()
        let cdn = sources.cdn()
        let key = StatusIndex.Key(
            generation: view.generation, fetches: sources.fetches.version,
            acme: acme.map { .init(object: ObjectIdentifier($0), version: $0.version) },
            cdn: cdn.map { .init(object: ObjectIdentifier($0), version: $0.version) }, verification: sources.verification?.version)
        return index.withLock { cached in
            if let cached, cached.key == key { return cached }
            if let cached, StatusIndex.monotonic() - cached.builtAt < cached.cost * Self.refreshCostShare { return cached }
            let fresh = StatusIndex(
                key: key, view: view, previous: cached, acme: acme?.statusesByName().statuses, cdn: cdn?.bySite(),
                verification: sources.verification?.verifiedByName(), fetches: sources.fetches.sites(), now: Self.now())
            cached = fresh
            return fresh
        }
    }

    /// `target` is the request target as sent: `/` and a query.
    func answer(target: String, sources: AdminPages) -> AdminEndpoint.Answer {
        guard let query = Query(target) else {
            return .init(status: .badRequest, body: Array("bad query\n".utf8))
        }
        let index = current(sources)
        var page = StatusHTML(now: Self.now())
        if let site = query["site"] {
            guard page.site(site, index: index) else {
                return .init(status: .notFound, body: Array("no such site\n".utf8))
            }
        } else {
            page.overview(index: index, query: query)
        }
        return .init(status: .ok, contentType: "text/html; charset=utf-8", body: page.finish(), fields: Self.fields)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// The page's own style and script, constant: the policy names them by hash.
    static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}h1{font-size:1.4em;margin:0}\
        table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border-bottom:1px solid #ddd;padding:4px 6px;\
        text-align:left;vertical-align:top}th{background:#f4f4f4}.bad{background:#fde8e8}.warn{background:#fff6dd}\
        .reason{color:#a00;font-weight:600}.muted{color:#777}code{font-size:12px;word-break:break-all}\
        td.name{overflow-wrap:anywhere;min-width:10em;max-width:24em}.summary span{margin-right:1.5em}
        """
    static let script = "setTimeout(function(){location.reload()},\(refreshSeconds * 1000));"

    /// Content-Security-Policy (CSP Level 3): nothing loads, nothing is framed, forms post only
    /// here; the one style and script run by hash. With the escaping, a second wall.
    static let fields: [(name: String, value: String)] = {
        func hash(_ text: String) -> String { "'sha256-" + Data(Digest.sha256(Array(text.utf8))).base64EncodedString() + "'" }
        let policy =
            "default-src 'none'; style-src \(hash(style)); script-src \(hash(script)); img-src 'none'; base-uri 'none'; "
            + "form-action 'self'; frame-ancestors 'none'"
        return [(name: "Content-Security-Policy", value: policy), (name: "Referrer-Policy", value: "no-referrer")]
    }()
}

/// A request target's query (`application/x-www-form-urlencoded`, the HTML Standard §4.10.21.8):
/// each name's first value, percent-decoded, `+` as a space. Nil for a malformed percent escape or
/// a value over `StatusPages.maximumQueryValue`.
struct Query {
    private var values: [String: String] = [:]

    init?(_ target: String) {
        guard let mark = target.firstIndex(of: "?") else { return }
        for pair in target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if values[name] == nil { values[name] = value }
        }
    }

    subscript(_ name: String) -> String? { values[name] }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = utf8.next().flatMap(HexDigit.value), let low = utf8.next().flatMap(HexDigit.value) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
            guard bytes.count <= StatusPages.maximumQueryValue else { return nil }
        }
        // Bytes that are not UTF-8 become U+FFFD: no site has such a name.
        return String(decoding: bytes, as: UTF8.self)
    }

}
