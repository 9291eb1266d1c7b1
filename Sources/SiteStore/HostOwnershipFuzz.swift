import SafeText
import Served

/// The checks of the `ownership` fuzz target (Fuzz/FuzzOwnership.swift, scripts/fuzz.sh), here so
/// that the normal test run replays its corpus through the same code (OwnershipFuzzReplayTests).
///
/// An input is a program of changes to a few sites under `w.test`: directories (some spelled in
/// upper case), alias symlinks, site.yaml aliases, exact and wildcard, at depths 0 to 3. After
/// each change `HostOwnership` resolves, and these must hold:
/// 1. a name is held by at most one site, and who serves a host is who holds the most specific
///    name for it (as `Snapshot.site(forHost:)` finds it among the names each site holds);
/// 2. an entry of sites/ spelled as its host always holds it (a directory name by its own site);
/// 3. a change to one site's aliases (or its removal, or a symlink's) never changes which site
///    serves a host that another site served;
/// 4. every name refused is held by the site the refusal names (no name lost to a contest);
/// 5. the incremental decision is the one a fresh decision of everything gives (each site's names
///    held and refused), and a restart from `remembered` decides everything the same;
/// 6. a copy taken before a change answers as before it: the tenant API changes copies of the
///    served ownership (`LayeredMap` shares their bulk), which must never show in the original.
///    An operation byte with bit 7 set first folds every change into the shared bases, so that
///    both layers are decided on.
public enum HostOwnershipFuzz {
    /// Sites at most (more add cost, not cases).
    static let maximumSites = 6
    /// Changes at most per input.
    static let maximumSteps = 32
    static let labels = ["a", "b", "c", "d"]

    /// A name from one byte: bit 7 a wildcard, bits 5-6 how many labels before `w.test`, bits 0-4
    /// those labels.
    static func name(_ byte: UInt8) -> HostName {
        let depth = Int((byte >> 5) & 3)
        var parts: [String] = []
        for i in 0..<depth {
            parts.append(labels[Int((byte >> UInt8(2 * i)) & 3)])
        }
        let text = (byte & 0x80 != 0 ? ["*"] : []) + parts + ["w", "test"]
        // Every name built here parses.
        return (try? HostName(parsing: text.joined(separator: "."))) ?? HostName(wildcardOver: "w.test")
    }

    /// An entry of sites/ for a name: as the host, or (odd `spelling`) with its first letter in
    /// upper case, as an operator may write it.
    static func entry(_ host: HostName, _ spelling: UInt8) -> String {
        guard spelling & 1 == 1, let first = host.name.firstIndex(where: { $0 != "*" && $0 != "." }) else { return host.name }
        return host.name.replacingCharacters(in: first...first, with: host.name[first].uppercased())
    }

    /// The same bytes as an operator's `aliases-allowed` (`AliasPolicy.parse`): parsed, or refused
    /// with a line of the text and a message with nothing `TerminalText` would escape; a
    /// parsed policy answers for any alias.
    static func checkPolicy(_ input: [UInt8]) -> String? {
        let text = String(decoding: input, as: UTF8.self)
        switch AliasPolicy.parse(text) {
        case .failure(let error):
            let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).count
            guard error.line >= 1, error.line <= lines else { return "aliases-allowed: line \(error.line) of \(lines)" }
            if let bad = error.description.unicodeScalars.first(where: TerminalText.isEscaped) {
                return "aliases-allowed: \(bad.escaped(asASCII: true)) unescaped in the message"
            }
        case .success(let policy):
            for byte in input.prefix(8) { _ = policy.allows(name(byte), site: name(byte).name) }
        }
        return nil
    }

    /// Hosts to ask about: every exact name the inputs can make, and a fresh label under each
    /// domain (answered by wildcards only).
    static let probes: [String] = {
        var out = Set<String>()
        for byte in 0...0x7F {
            let name = name(UInt8(byte)).name
            out.insert(name)
            out.insert("z." + name)
        }
        return out.sorted()
    }()

    /// Runs one input; nil when every check held, else what failed.
    public static func check(_ input: [UInt8]) -> String? {
        if let problem = checkPolicy(input) { return problem }
        var bytes = input[...]
        func next() -> UInt8? { bytes.popFirst() }
        var ownership = HostOwnership()
        var sites: [String: HostOwnership.Names] = [:]
        var steps = 0
        var before: [String: String] = [:]
        while let op = next(), steps < maximumSteps {
            steps += 1
            let ordered = sites.keys.sorted()
            let memory = ownership.remembered
            if op & 0x80 != 0 { ownership.foldAll() }
            let copy = ownership
            let copyAnswers = answers(copy, sites: ordered)
            var changed: String?
            switch op % 5 {
            case 0:
                guard sites.count < maximumSites, let n = next(), let spelling = next() else { break }
                let host = name(n)
                let site = entry(host, spelling)
                guard !entries(sites).contains(site) else { break }
                sites[site] = HostOwnership.Names(host: host)
                ownership.set(site, sites[site]!)
            case 1:
                guard !ordered.isEmpty, let i = next() else { break }
                let site = ordered[Int(i) % ordered.count]
                sites[site] = nil
                ownership.remove(site)
                changed = site
            case 2:
                guard !ordered.isEmpty, let i = next(), let count = next() else { break }
                let site = ordered[Int(i) % ordered.count]
                var aliases: [HostName] = []
                for _ in 0..<(count % 5) {
                    guard let n = next() else { break }
                    aliases.append(name(n))
                }
                sites[site]!.aliases = aliases
                ownership.set(site, sites[site]!)
                changed = site
            case 3:
                guard !ordered.isEmpty, let i = next(), let n = next(), let spelling = next() else { break }
                let site = ordered[Int(i) % ordered.count]
                let host = name(n)
                let link = entry(host, spelling)
                guard !entries(sites).contains(link) else { break }
                sites[site]!.symlinks[link] = host
                ownership.set(site, sites[site]!)
            default:
                guard !ordered.isEmpty, let i = next() else { break }
                let site = ordered[Int(i) % ordered.count]
                guard let link = sites[site]!.symlinks.keys.sorted().first else { break }
                sites[site]!.symlinks[link] = nil
                ownership.set(site, sites[site]!)
                changed = site
            }
            _ = ownership.resolve()
            if answers(copy, sites: ordered) != copyAnswers {
                return "step \(steps): a change made after a copy was taken changed the copy's answers"
            }
            let after: [String: String]
            switch invariants(ownership, sites: sites) {
            case .failure(let failure): return "step \(steps): \(failure.description)"
            case .success(let servers): after = servers
            }
            defer { before = after }
            if let changed {
                for (host, site) in before where site != changed && after[host] != site {
                    return "step \(steps): a change to \(changed) moved \(host) from \(site) to \(after[host] ?? "nobody")"
                }
            }
            // 5: the same from scratch, from the memory before this change and after it.
            for (prior, what) in [(memory, "a fresh decision"), (ownership.remembered, "a restart")] {
                var fresh = HostOwnership(prior: prior)
                for (site, names) in sites { fresh.set(site, names) }
                _ = fresh.resolve()
                for site in sites.keys where fresh.held(by: site) != ownership.held(by: site) {
                    return "step \(steps): \(what) gives \(site) \(fresh.held(by: site)), not \(ownership.held(by: site))"
                }
                for site in sites.keys where refused(fresh, site) != refused(ownership, site) {
                    return "step \(steps): \(what) refuses \(site) \(fresh.refusals(of: site)), not \(ownership.refusals(of: site))"
                }
                if what == "a restart", fresh.remembered != ownership.remembered {
                    return "step \(steps): a restart remembers \(fresh.remembered), not \(ownership.remembered)"
                }
            }
        }
        return nil
    }

    /// The names refused to a site and how it names each. Not why: a claim refused under an
    /// alias's wildcard keeps that reason when a wildcard decided later would refuse it too
    /// (`HostOwnership.resolve` decides again only the claims a change can free), where a fresh
    /// decision names the later one.
    static func refused(_ ownership: HostOwnership, _ site: String) -> [String] {
        ownership.refusals(of: site).map { "\($0.host) (\($0.source))" }
    }

    /// Everything `ownership` answers about some sites: each one's names held and refused, who
    /// holds each probe, and what it remembers. Values, compared as such: their text cost most of
    /// a replay's time in a debug build.
    struct Answers: Equatable {
        struct Site: Equatable {
            var name: String
            var held: [HostName]
            var refused: [HostOwnership.Refusal]
        }
        var sites: [Site]
        var servers: [HostOwnership.Holder?]
        var remembered: [HostName: String]
    }

    static func answers(_ ownership: HostOwnership, sites: [String]) -> Answers {
        Answers(
            sites: sites.map { Answers.Site(name: $0, held: ownership.held(by: $0), refused: ownership.refusals(of: $0)) },
            servers: probes.map { ownership.holder(serving: $0) }, remembered: ownership.remembered)
    }

    static func entries(_ sites: [String: HostOwnership.Names]) -> Set<String> {
        Set(sites.keys).union(sites.values.flatMap(\.symlinks.keys))
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Checks 1, 2 and 4; returns who serves each probe host.
    static func invariants(_ ownership: HostOwnership, sites: [String: HostOwnership.Names]) -> Result<[String: String], Failure> {
        var servers: [String: String] = [:]
        func fail(_ text: String) -> Result<[String: String], Failure> { .failure(Failure(description: text)) }
        // 1: held names are disjoint, and serving follows them.
        var exact: [String: String] = [:]
        var wildcards: [String: String] = [:]
        for site in sites.keys.sorted() {
            for host in ownership.held(by: site) {
                if let suffix = host.wildcardSuffix {
                    if let other = wildcards.updateValue(site, forKey: suffix) { return fail("\(host) held by \(other) and \(site)") }
                } else if let other = exact.updateValue(site, forKey: host.name) {
                    return fail("\(host) held by \(other) and \(site)")
                }
                guard ownership.holder(of: host)?.site == site else { return fail("\(site) holds \(host), whose holder is another") }
            }
        }
        for host in probes {
            var expected = exact[host]
            var rest = Substring(host)
            while expected == nil, let dot = rest.firstIndex(of: ".") {
                rest = rest[rest.index(after: dot)...]
                expected = wildcards[String(rest)]
            }
            let found = ownership.holder(serving: host)?.site
            guard found == expected else { return fail("\(host) is served by \(found ?? "nobody"), its names say \(expected ?? "nobody")") }
            servers[host] = found
        }
        for (site, names) in sites {
            let held = Set(ownership.held(by: site))
            // 2: an entry spelled as its host holds it.
            for (entry, host) in [(site, names.host)] + names.symlinks.map({ ($0.key, $0.value) }) where entry == host.name {
                guard held.contains(host) else { return fail("the entry \(entry) of \(site) does not hold its name") }
            }
            // 4: every claim is held or refused, and a refusal names a holder that holds it.
            let refusals = ownership.refusals(of: site)
            let refused = Set(refusals.map(\.host))
            for host in Set([names.host] + names.symlinks.values + names.aliases) {
                guard held.contains(host) != refused.contains(host) else {
                    return fail("\(site)'s claim on \(host) is neither held nor refused, or both")
                }
            }
            for refusal in refusals {
                let name: HostName
                switch refusal.reason {
                case .underWildcard(let wildcard, _): name = wildcard
                case .named, .heldFirst: name = refusal.host
                case .notAllowed: continue
                }
                guard let holder = ownership.holder(of: name), holder.site == refusal.holder?.site, holder.site != site else {
                    return fail("\(site) is refused \(refusal.host) for \(refusal.holder?.site ?? "nobody"), which does not hold \(name)")
                }
                if !refusal.host.isWildcard && ownership.holder(serving: refusal.host.name) == nil {
                    return fail("\(refusal.host) is refused to \(site) and served by nobody")
                }
            }
        }
        return .success(servers)
    }
}
