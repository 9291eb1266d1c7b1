import Foundation
import Reactor
import Served

extension ConfigLoader {
    /// Batches larger than this are read on every core: a full load of 100,000 sites is file reads,
    /// JSON parsing and gzip, all independent per site.
    public static let parallelThreshold = 64

    /// The names in the order a reload reads them: site directories first, so that aliases find
    /// their targets, each part sorted. `listed`: entries of `sites/` with the type readdir gave
    /// (the entry's own: a symlink to a directory is no directory); a name listed without a type
    /// (DT_UNKNOWN, which some file systems give) or not listed (a record, an alias, a name the
    /// watcher reported) takes one `lstat`, on every core for a large batch. A type is what the
    /// entry was when listed: `examine` reads what it is then, and a directory replaced since only
    /// moves in this order.
    static func directoriesFirst(_ names: Set<String>, sitesPath: String, listed: [Files.Entry] = []) -> [String] {
        // Nearly always (a start, a full rescan of a tree whose names were all listed): each name
        // listed once with its type, and no other. Two sorted arrays then, without the sets below
        // (a third of this order's time at a million sites, perf in docs/benchmarks.md).
        if listed.count >= names.count {
            var directories: [String] = []
            var others: [String] = []
            for entry in listed {
                guard let kind = entry.kind, names.contains(entry.name) else { continue }
                if kind == .directory { directories.append(entry.name) } else { others.append(entry.name) }
            }
            if directories.count + others.count == names.count {
                directories.sort()
                others.sort()
                // A listing may give a name twice (one made again while it was read): then some
                // other name is missing and the sets below decide.
                if !hasCommonOrRepeated(directories, others) { return directories + others }
            }
        }
        var directories = Set<String>(minimumCapacity: names.count)
        var typed = Set<String>(minimumCapacity: listed.count)
        for entry in listed {
            guard let kind = entry.kind, names.contains(entry.name) else { continue }
            typed.insert(entry.name)
            if kind == .directory { directories.insert(entry.name) }
        }
        let candidates = typed.isEmpty ? Array(names) : names.filter { !typed.contains($0) }
        let kinds = Parallel.map(candidates, threshold: parallelThreshold) { isDirectory(sitesPath, $0) }
        for (name, isDirectory) in zip(candidates, kinds) where isDirectory { directories.insert(name) }
        return directories.sorted() + names.subtracting(directories).sorted()
    }

    /// Whether two sorted arrays share a name, or either holds one twice.
    static func hasCommonOrRepeated(_ a: [String], _ b: [String]) -> Bool {
        var i = 0
        var j = 0
        var last: String?
        while i < a.count || j < b.count {
            let next: String
            if j == b.count || (i < a.count && a[i] < b[j]) {
                next = a[i]
                i += 1
            } else {
                next = b[j]
                j += 1
            }
            if next == last { return true }
            last = next
        }
        return false
    }

    /// The config directory `sites/` is in, whose `tls/` folders no site file is read from.
    static func configRoot(of sitesPath: String) -> String {
        (sitesPath as NSString).deletingLastPathComponent
    }

    /// A directory itself, not a symlink to one: one `lstat` (a full load asks for every name).
    static func isDirectory(_ sitesPath: String, _ name: String) -> Bool {
        (try? Files.linkStatus(sitesPath + "/" + name))?.kind == .directory
    }

    /// Reads and validates entries, in parallel for large batches; the results are applied in order
    /// on the calling thread. `records`: the registry's sites as they are now (a name that is one
    /// is a site even while its directory cannot be examined).
    static func examine(
        _ names: [String], sitesPath: String, records: [String: SiteRecord], known: KnownValid?,
        check: @escaping SiteRegistry.CertificateCheck, options: ServingOptions, deferChecks: Bool = false,
        shared: ContentCache? = nil, watchTLS: (@Sendable (String) -> Void)? = nil
    ) -> [Entry] {
        // The records as they are now, shared rather than copied into a set (a set per chunk cost
        // O(sites) each: quadratic over a full load). Nothing changes them while `examine` runs:
        // the calling thread waits for the reads, except a first load's, which reads ahead and
        // passes no records (`SiteRegistry.examiner`).
        nonisolated(unsafe) let sites = records
        let isSite: @Sendable (String) -> Bool = { name in
            sites[name] != nil || examineKind(sitesPath, name) == .directory
        }
        // A site's own certificate pair is checked here too, on every core, unless it passed
        // before (serve only): at 50,000 pairs the checks are most of a start. With `deferChecks`,
        // a pair of a site that has none in service is not checked here at all but after the
        // load (`SiteRegistry.settleCertificateChecks`): OpenSSL 3.0 spends about a millisecond
        // of CPU parsing a pair, mostly making decoder contexts, and a first start of 50,000
        // pairs would wait for all of them. A site that has a pair in service keeps the rule that
        // a new pair must load before it replaces the last good one: it is checked now.
        // `sites/` open once for the batch: each site directory is opened through it
        // (`examine`), a one-name walk for the kernel instead of the whole path.
        let sitesDirectory = try? Files.openDirectory(sitesPath)
        // The batch's reads share the contents they prepare (`BatchContents`).
        let shared = shared.map { cache in
            var cache = cache
            cache.batch = BatchContents()
            return cache
        }
        defer { if let sitesDirectory { Files.close(sitesDirectory) } }
        let configRoot = configRoot(of: sitesPath)
        let examineOne: @Sendable (String) -> Entry = { name in
            let entry = examine(
                sitesPath: sitesPath, name: name, isSite: isSite, known: known, options: options, shared: shared,
                sites: sitesDirectory, configRoot: configRoot, watchTLS: watchTLS)
            guard let known, case .site(var source) = entry, let files = source.certificate else { return entry }
            let identity = files.identity
            if known.contains(pair: files) {
                source.checkedCertificate = (identity, nil)
            } else if deferChecks && sites[name]?.served?.certificate == nil {
                source.certificateCheckDeferred = true
            } else {
                source.checkedCertificate = (identity, check(files))
            }
            return .site(source)
        }
        return Parallel.map(names, threshold: parallelThreshold, examineOne)
    }
}
