import Logging
import Reactor
import Served

extension KnownValid {
    /// Whether the pair `files` is known to load and match, looked up by its identity's 32 bytes
    /// (every pair of a restart is looked up; its hex identity parsed back cost more than the
    /// search). Here rather than in KnownValid.swift, which the `verdicts` fuzz target builds alone.
    func contains(pair files: CertificateFiles) -> Bool {
        files.withIdentityBytes { contains(.certificate, sha256: $0) }
    }
}

/// Contents whose verdict is known valid (`KnownValid`), so that loads skip validating them
/// again, kept between runs in serve's state directory: what a start spends on 50,000 sites is
/// mostly validation and certificate checks, and a restart serves the same bytes.
struct ValidityCache {
    /// The verdicts; nil in a registry that keeps sources (the reporting commands report every
    /// finding of every file).
    private(set) var known: KnownValid?
    /// Where `known` is kept between runs, by its keys, and the binary it belongs to; nil: memory
    /// only.
    private var file: (state: StateFile<[KnownValid.Key]>, identity: String)?
    /// Whether a failed write was logged already (a state directory that cannot be written
    /// would otherwise log at every rescan).
    var writeFailed: Bool { file?.state.writeFailed ?? false }

    /// `keepsSources`: a reporting registry, which keeps no verdicts.
    init(file: (path: String, identity: String)?, keepsSources: Bool) {
        guard !keepsSources else { return }
        known = file.map { KnownValid.load(path: $0.path, identity: $0.identity) } ?? KnownValid()
        if let file {
            self.file = (StateFile(path: file.path, stored: known?.sorted ?? [], keeps: "the validated contents"), file.identity)
        }
    }

    /// While set, `insert` records nothing: during a first load or a settling of late checks, which
    /// a `remember` follows (`SiteRegistry.reloadAll`, `reload`, `settleCertificateChecks`; a
    /// start's after readiness), recording every verdict from what is then served. A first load's
    /// chunks are read with the verdicts as the load started (`SiteRegistry.examiner`); its
    /// re-reads after the loop (alias targets) and a second attempt after a tree swap validate
    /// again what it validated, a cost only. One by one, the 50,000 new verdicts of a first start
    /// grew the set of added keys past 64 KB seven times, and the late checks' 50,000 as often
    /// again; the blocks each growth freed were then split for small allocations that live on:
    /// 13 MB more held after a first start at 100,000 sites (docs/benchmarks.md, "A first start's
    /// verdicts").
    var defersInserts = false

    mutating func insert(_ kind: KnownValid.Kind, digestHex: String) {
        guard !defersInserts else { return }
        known?.insert(kind, digestHex: digestHex)
    }

    /// After a full load: the known verdicts become those of the contents now served (so that
    /// they never outgrow the config directory), written to `file` when they changed. Pairs
    /// waiting for their late check or refused by it (`late`) are not recorded as valid.
    mutating func remember(
        served: some Sequence<ServedSite>, defaultCertificate: String?, late: inout LateCertificateChecks, logger: Logger
    ) {
        guard known != nil else { return }
        var current: [KnownValid.Key] = []
        func add(_ kind: KnownValid.Kind, _ digestHex: String) {
            if let key = KnownValid.Key(kind, hex: digestHex) { current.append(key) }
        }
        // Refused pairs still served: a site read again after its pair failed keeps it when the
        // read cannot happen (the root unresolved, a load given up), and such a pair is neither
        // recorded as valid nor forgotten as refused until no site serves it.
        var stillRefused = Set<String>()
        for site in served {
            if let file = site.aasa { add(.aasa, file.content.digest) }
            if let file = site.assetLinks { add(.assetLinks, file.content.digest) }
            guard let identity = site.certificateIdentity, !late.isUnchecked(identity) else { continue }
            if late.isRefused(identity) {
                stillRefused.insert(identity)
            } else {
                add(.certificate, identity)
            }
        }
        late.forgetRefused(except: stillRefused)
        if let identity = defaultCertificate, !late.isRefused(identity) { add(.certificate, identity) }
        let remembered = KnownValid(keys: current)
        guard let identity = file?.identity, let stored = file?.state.stored else {
            known = remembered
            return
        }
        if remembered.sorted == stored {
            // The verdicts read at start (or last written): kept, rather than a second equal array.
            known = KnownValid(sorted: stored)
            return
        }
        known = remembered
        // Only start-up time depends on it.
        file?.state.keep(remembered.sorted, logger: logger) { path throws(SystemError) in
            try remembered.store(path: path, identity: identity)
        }
    }

    /// Why a certificate pair cannot be used, or nil: asked of `check` (the TLS layer) unless the
    /// same bytes passed before (the identity is their SHA-256).
    /// `checked`: the verdict the read already got for these very files, with their identity,
    /// so that neither is computed again. A pair refused by its late check (`late`) stays refused.
    mutating func certificateProblem(
        _ files: CertificateFiles, checked: (identity: String, problem: String?)?, late: LateCertificateChecks,
        check: SiteRegistry.CertificateCheck
    ) -> String? {
        guard known != nil else { return check(files) }
        // A pair known valid is found by its digest's bytes (a restart looks up every pair;
        // `checked` is the read's verdict on these very files, with their identity).
        if known?.contains(pair: files) == true { return nil }
        let identity = checked?.identity ?? files.identity
        if let problem = late.refusal(identity) { return problem }
        let problem: String?
        if let checked {
            problem = checked.problem
        } else {
            problem = check(files)
        }
        if problem == nil { insert(.certificate, digestHex: identity) }
        return problem
    }
}
