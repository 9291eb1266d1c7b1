import Logging
import Reactor
import Served

/// Contents whose verdict is known valid (`KnownValid`), so that loads skip validating them
/// again, kept between runs in serve's state directory: what a start spends on 50,000 sites is
/// mostly validation and certificate checks, and a restart serves the same bytes.
struct ValidityCache {
    /// The verdicts; nil in a registry that keeps sources (the reporting commands report every
    /// finding of every file).
    private(set) var known: KnownValid?
    /// Where `known` is kept between runs, and the binary it belongs to; nil: memory only.
    let file: (path: String, identity: String)?
    /// What was last written there (nothing is written when nothing changed).
    private var stored: Set<String> = []
    /// Whether a failed write was logged already (a state directory that cannot be written
    /// would otherwise log at every rescan).
    private(set) var writeFailed = false

    /// `keepsSources`: a reporting registry, which keeps no verdicts.
    init(file: (path: String, identity: String)?, keepsSources: Bool) {
        self.file = keepsSources ? nil : file
        if !keepsSources {
            known = file.map { KnownValid.load(path: $0.path, identity: $0.identity) } ?? KnownValid()
            stored = known?.keys ?? []
        }
    }

    mutating func insert(_ kind: KnownValid.Kind, digestHex: String) {
        known?.insert(kind, digestHex: digestHex)
    }

    /// After a full load: the known verdicts become those of the contents now served (so that
    /// they never outgrow the config directory), written to `file` when they changed.
    mutating func remember(served: some Sequence<ServedSite>, defaultCertificate: String?, logger: Logger) {
        guard known != nil else { return }
        var current = KnownValid()
        for site in served {
            if let file = site.aasa { current.insert(.aasa, digestHex: file.content.digest) }
            if let file = site.assetLinks { current.insert(.assetLinks, digestHex: file.content.digest) }
            if let identity = site.certificateIdentity { current.insert(.certificate, digestHex: identity) }
        }
        if let identity = defaultCertificate { current.insert(.certificate, digestHex: identity) }
        known = current
        guard let file, current.keys != stored else { return }
        do throws(SystemError) {
            try current.store(path: file.path, identity: file.identity)
            stored = current.keys
            writeFailed = false
        } catch {
            // Only start-up time depends on it: say so once, and serve on.
            if !writeFailed {
                logger.warning(
                    "cannot keep the validated contents for the next start", metadata: ["path": "\(file.path)", "error": "\(error)"])
            }
            writeFailed = true
        }
    }

    /// Why a certificate pair cannot be used, or nil: asked of `check` (the TLS layer) unless the
    /// same bytes passed before (the identity is their SHA-256).
    /// `checked`: the verdict the read already got for these very files, with their identity,
    /// so that neither is computed again.
    mutating func certificateProblem(
        _ files: CertificateFiles, checked: (identity: String, problem: String?)?, check: SiteRegistry.CertificateCheck
    ) -> String? {
        guard known != nil else { return check(files) }
        let identity = checked?.identity ?? files.identity
        if known?.contains(.certificate, digestHex: identity) == true { return nil }
        let problem: String?
        if let checked {
            problem = checked.problem
        } else {
            problem = check(files)
        }
        if problem == nil { known?.insert(.certificate, digestHex: identity) }
        return problem
    }
}
