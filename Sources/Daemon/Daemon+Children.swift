import AASA
package import ACME
package import Logging
import Reactor
package import SiteStore
import Synchronization
package import TLS

/// Wildcard children on demand (docs/acme.md, "Wildcard children"): a child name of a `per-name`
/// wildcard site (`alice.users.example.com` under `*.users.example.com`) gets a certificate of its
/// own, over TLS-ALPN-01 or HTTP-01, once an approval says yes: the site's allow file
/// (`allowed-children`), else `acme.ask`. The handshake that asks for it never waits: it gets the
/// current certificate, and the child's own on a later handshake.
extension Daemon {
    /// The approvals, when automatic certificates are on; their askers are not started yet.
    /// Children are kept in the storage directory (`ChildRecords`).
    static func childApprovals(settings: ServerSettings, config: String, logger: Logger) throws(ACMEError) -> ChildApprovals? {
        guard settings.acme.directory != nil else { return nil }
        let endpoint = settings.acme.ask.map(ChildAsk.Endpoint.init)
        let records = ChildRecords(storage: settings.acme.storage ?? settings.state + "/acme")
        return try ChildApprovals(childrenPerParent: settings.acme.namesPerSite, logger: logger, records: records) {
            name, parent, isCancelled in
            Self.askAboutChild(name, parent: parent, config: config, endpoint: endpoint, isCancelled: isCancelled)
        }
    }

    /// What hands the certificate manager its wanted names: computed from `snapshot()` (the
    /// newest published) and handed over under one lock, so that two callers (a reload, an
    /// asker that approved a child, a passed ownership check) cannot hand them over in the
    /// other order than they computed them, an older snapshot's names last.
    static func wantNames(
        manager: @escaping @Sendable () -> CertificateManager?, names: ACMENames, snapshot: @escaping @Sendable () -> Snapshot
    ) -> @Sendable () -> Void {
        let lock = Mutex(())
        return {
            lock.withLock { _ in manager()?.want(names.names(in: snapshot())) }
        }
    }

    /// Takes again, at start, the children the storage keeps records of (approved, not refused
    /// since, seen within the grace period) that are still children of a `per-name` site, so
    /// that a restart serves them their certificates from the first handshake; a certificate in
    /// storage without a record is no child.
    static func adoptStoredChildren(_ children: ChildApprovals, names: ACMENames, snapshot: Snapshot, logger: Logger) {
        let adopted = children.adoptStored { names.childSite(of: $0, in: snapshot)?.directory }
        if adopted > 0 { logger.info("wildcard children kept in storage taken again", metadata: ["count": "\(adopted)"]) }
    }

    /// Whether `name` may be a child of the site in `sites/<parent>`: its allow file when it has
    /// one, else `acme.ask`, else no. An allow file that cannot be used, or a site with neither,
    /// is a no for every new name of that site for a while (`ChildLedger.refusedParent`), never
    /// a failure: a tenant's broken file must not pause the asks of every other site.
    static func askAboutChild(
        _ name: String, parent: String, config: String, endpoint: ChildAsk.Endpoint?,
        isCancelled: @escaping @Sendable () -> Bool = { false }
    ) -> ChildApprovals.Heard {
        let directory = config + "/sites/" + parent
        // Read as the loader reads a page: a regular file of the site's own directory with one
        // name, never from a tls/ or the ownership checks' folder (a symlink or hard link there
        // is refused on the opened descriptor), and bounded.
        let rules = ConfigLoader.FileRules(siteDirectory: directory, configRoot: config, within: directory, singleName: true)
        switch ConfigLoader.readFile(
            path: directory + "/" + ConfigLoader.allowedChildrenFileName, limit: AllowedChildren.maximumFileBytes, rules: rules)
        {
        case .success(let file):
            switch AllowedChildren.parse(file.bytes) {
            case .success(let allowed):
                return ChildApprovals.Heard(allowed.allows(name) ? .yes : .no, allowed.allows(name) ? "listed" : "not listed")
            case .failure(let problem):
                return ChildApprovals.Heard(.no, "\(ConfigLoader.allowedChildrenFileName): \(problem.message)", wholeParent: true)
            }
        case .failure(let error) where error.isMissing:
            guard let endpoint else { return ChildApprovals.Heard(.no, "no allow file and no acme.ask", wholeParent: true) }
            let (answer, detail) = ChildAsk.ask(endpoint, name: name, isCancelled: isCancelled)
            return ChildApprovals.Heard(answer, detail)
        case .failure(let error):
            return ChildApprovals.Heard(.no, "\(ConfigLoader.allowedChildrenFileName): \(error.description)", wholeParent: true)
        }
    }

    /// The SNI callback's part for children: the name is offered (`ChildApprovals.offer`), then its
    /// own certificate is returned when it has one, else nil. Names that are
    /// no child of a `per-name` site return nil at once.
    static func childCertificate(
        for name: String, site: ServedSite, snapshot: Snapshot, automatic: CertificateManager, names: ACMENames
    ) -> TLSServer.CertificateSource? {
        guard let approvals = names.children, names.childSite(of: name, in: snapshot, matched: site) != nil else { return nil }
        // Offered whether or not it has its certificate yet: a child in use stays one (its grace
        // period starts again), and one whose yes has run out is asked about again.
        approvals.offer(name, parent: site.directory)
        return automatic.ownCertificate(for: name)
    }
}

extension ACMENames {
    /// The site `name` is a child of: a `per-name` wildcard site without a pair of its own, `name`
    /// in normal form (`HostName.isPlain`: lower case, no final dot, letters, digits and inner
    /// hyphens) exactly one label under one of its wildcards, not one of its own names, not another
    /// site's (the snapshot gives an exact name its own site first, so the ownership rule wins),
    /// not covered by the default pair, not held back by the ownership check (neither the name
    /// nor its wildcard: a wildcard whose owner has not proven it gets no children). `matched`: the site
    /// `snapshot.site(forHost: name)` gave, when the caller has it.
    func childSite(of name: String, in snapshot: Snapshot, matched: ServedSite? = nil) -> ServedSite? {
        guard HostName.isPlain(name.utf8), let site = matched ?? snapshot.site(forHost: name), site.certificate == nil, isPerName(site),
            let dot = name.utf8.firstIndex(of: UInt8(ascii: "."))
        else { return nil }
        let pattern = "*" + name[dot...]
        guard site.containsHost(where: { $0.name == pattern }), !site.containsHost(where: { $0.name == name }),
            !defaultCovers(name, in: snapshot), !holdsBack(name), !holdsBack(pattern)
        else { return nil }
        return site
    }

    /// Adds the approved children still children (their site still `per-name`, the name still
    /// nobody else's) to `names`, under a key of their own per parent (`<directory>/`, which no
    /// directory can be): the parent's children take turns in the order queue as one site, and
    /// the parent's own names keep their seats.
    func addChildren(to names: inout [String: [String]], snapshot: Snapshot) {
        guard let children else { return }
        var byParent: [String: [String]] = [:]
        for (name, parent) in children.children() where childSite(of: name, in: snapshot)?.directory == parent {
            byParent[parent + "/", default: []].append(name)
        }
        for (key, list) in byParent { names[key] = list.sorted() }
    }
}

/// A `per-name` wildcard site's allow file (`allowed-children`): one entry a line, a child name
/// (`alice.users.example.com`) or a pattern with one `*` in its first label
/// (`team-*.users.example.com`: the `*` stands for one or more letters, digits or hyphens); blank
/// lines and lines starting with `#` are skipped. Parsed strictly: any other line refuses the whole
/// file (a typo must not approve, or refuse, names silently), and a refused file approves nothing.
struct AllowedChildren: Sendable, Equatable {
    /// The file's size at most: 10,000 names of 25 bytes.
    static let maximumFileBytes = 256 * 1024
    /// Entries at most: the most children a server holds (`ChildLedger.maximumChildren`).
    static let maximumEntries = ChildLedger.maximumChildren

    struct Problem: Error, Equatable {
        var message: String
    }

    var names: Set<String> = []
    /// Patterns by the rest of the name after the first label: the first label's text before and
    /// after its `*`.
    var patterns: [String: [Pattern]] = [:]

    struct Pattern: Sendable, Equatable {
        var prefix: String
        var suffix: String
    }

    static func parse(_ bytes: [UInt8]) -> Result<AllowedChildren, Problem> {
        guard bytes.count <= maximumFileBytes else { return .failure(Problem(message: "is larger than \(maximumFileBytes) bytes")) }
        var allowed = AllowedChildren()
        var count = 0
        var lineNumber = 0
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
            count += 1
            guard count <= maximumEntries else { return .failure(Problem(message: "has more than \(maximumEntries) entries")) }
            let refusal = Problem(
                message: "line \(lineNumber): must be a lower-case host name, or one with a single '*' in its first label, "
                    + "under two labels or more (team-*.users.example.com)")
            let stars = line.count { $0 == UInt8(ascii: "*") }
            guard stars <= 1, let dot = line.firstIndex(of: UInt8(ascii: ".")) else { return .failure(refusal) }
            let label = line[..<dot]
            let rest = line[line.index(after: dot)...]
            // Checked as a name in normal form with the `*` read as a letter: letters, digits and
            // inner hyphens only, so no control byte, space, CR or upper case gets in. The rest
            // needs two labels: a pattern never spans a public suffix.
            let checked = line.map { $0 == UInt8(ascii: "*") ? UInt8(ascii: "x") : $0 }
            guard rest.contains(UInt8(ascii: ".")), HostName.isPlain(String(decoding: checked, as: UTF8.self).utf8),
                !rest.contains(UInt8(ascii: "*"))
            else { return .failure(refusal) }
            if let star = label.firstIndex(of: UInt8(ascii: "*")) {
                let pattern = Pattern(
                    prefix: String(decoding: label[..<star], as: UTF8.self),
                    suffix: String(decoding: label[label.index(after: star)...], as: UTF8.self))
                allowed.patterns[String(decoding: rest, as: UTF8.self), default: []].append(pattern)
            } else {
                allowed.names.insert(String(decoding: line, as: UTF8.self))
            }
        }
        return .success(allowed)
    }

    /// Whether `name` (a checked child name) is listed or matches a pattern.
    func allows(_ name: String) -> Bool {
        if names.contains(name) { return true }
        guard let dot = name.firstIndex(of: ".") else { return false }
        let label = name[..<dot]
        let rest = String(name[name.index(after: dot)...])
        return (patterns[rest] ?? []).contains {
            label.utf8.count > $0.prefix.utf8.count + $0.suffix.utf8.count && label.hasPrefix($0.prefix) && label.hasSuffix($0.suffix)
        }
    }
}

extension AdminPages {
    /// `/sites` with `children` added to its `acme` summary (read now: the counters move without
    /// the page being rebuilt): approved children, asks pending and running, answers kept, asks
    /// by answer, names dropped by reason, refusals from the cache, children forgotten. `page`
    /// ends with the summary's `}` and the page's own: the end `LockedRegistry.withTiers` makes
    /// (its `tail`, a few hundred bytes, so the page itself is never copied for this).
    static func withChildren(_ page: [UInt8], _ children: ChildApprovals?) -> [UInt8] {
        guard let summary = children?.summary(), page.count >= 2, page[page.count - 1] == UInt8(ascii: "}"),
            page[page.count - 2] == UInt8(ascii: "}")
        else { return page }
        let counters = summary.counters
        let asks = ChildLedger.Answer.allCases.map { "\"\($0.rawValue)\":\(counters.asks[$0] ?? 0)" }.joined(separator: ",")
        let dropped = ChildLedger.Drop.allCases.map { "\"\($0.rawValue)\":\(counters.dropped[$0] ?? 0)" }.joined(separator: ",")
        let object =
            "\"children\":{\"children\":\(summary.children),\"pending\":\(summary.pending),\"inFlight\":\(summary.inFlight),"
            + "\"answersKept\":\(summary.answersKept),\"asks\":{\(asks)},\"dropped\":{\(dropped)},\"cached\":\(counters.cached),"
            + "\"forgotten\":\(counters.forgotten),\"refusing\":{\(refusing(summary.refusing))}}"
        return page.dropLast(2) + Array(",\(object)}}".utf8)
    }

    /// The parents refusing every new name, each its site's directory and what was found, as
    /// JSON members (escaped: a file's problem may quote what the tenant wrote).
    private static func refusing(_ list: [ChildApprovals.Refusing]) -> String {
        list.map {
            JSONValue.quote($0.parent) + ":" + JSONValue.quote($0.detail)
        }.joined(separator: ",")
    }
}
