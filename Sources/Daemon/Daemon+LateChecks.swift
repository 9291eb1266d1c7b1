import Dispatch
import Glibc
import Logging
import Reactor
import Served
import SiteStore

/// Certificate pairs the first load took unchecked (`SiteRegistry.defersCertificateChecks`):
/// OpenSSL 3.0 spends about a millisecond of CPU to parse a pair (most of it making decoder
/// contexts), so a first start at 50,000 sites with pairs of their own would spend most of its
/// time checking them before serving anything.
extension Daemon {
    /// Pairs without a verdict that a start checks before it is ready; more are checked after.
    /// 256 pairs take about 0.1 s on 2 cores: a small config (every test's) starts exactly as if
    /// every pair were checked at load, with a broken one reported before `aasad ready`.
    package static let certificateChecksBeforeReady = 256

    static func checksCertificatesBeforeReady(unchecked: Int) -> Bool { unchecked <= certificateChecksBeforeReady }

    /// Pairs a start that checks the rest after readiness checks before it, to find a default
    /// certificate when config/tls/ has none and every site has a pair: the first sites' by
    /// name, in order, until one passes. A check is about a millisecond (OpenSSL 3.0); the walk
    /// over every site that finds the candidates costs more at scale: the whole step took 0.07
    /// to 0.08 s of CPU at 100,000 sites (docs/benchmarks.md). More broken pairs than that first
    /// by name fall back to the development certificate, as a broken pair did before the checks
    /// were deferred.
    package static let defaultCandidateChecks = 8

    /// Checks the pairs of the first sites by name that wait for their check, one at a time,
    /// until one passes (at most `defaultCandidateChecks`), and settles the verdicts at once
    /// (`SiteRegistry.settleCertificateChecks`: a refused pair's sites are read again, without
    /// it; one settling, since each walks every site). Returns the identity of the pair that
    /// passed (`certificates`' `defaultPair`, a second safeguard: `certificates` leaves out the
    /// refused pairs a site whose read cannot happen still serves, which alone makes this pair
    /// the default), and the sites whose pair
    /// was refused when one passed (`certificates`' `failedEarly`), none otherwise: with no pair
    /// passing, they count as sites without a pair, as in a start that checks every pair before
    /// readiness.
    static func checkDefaultCandidates(
        _ registry: SiteRegistry, check: SiteRegistry.CertificateCheck
    ) -> (passed: String?, failedEarly: Set<String>) {
        let snapshot = registry.snapshot
        guard snapshot.defaultCertificate == nil else { return (nil, []) }
        // One walk over every site (each is tens of milliseconds at 100,000 sites): the sites
        // with the lowest names holding distinct pairs, at most as many as may be checked.
        var candidates: [ServedSite] = []
        for site in snapshot.sites.values {
            // A site without a pair needs the development certificate anyway.
            guard let files = site.certificate else { return (nil, []) }
            if let held = candidates.firstIndex(where: { $0.certificate?.hasSameBytes(as: files) == true }) {
                guard site.directory < candidates[held].directory else { continue }
                candidates.remove(at: held)
            } else if candidates.count == defaultCandidateChecks {
                guard let last = candidates.last, site.directory < last.directory else { continue }
                candidates.removeLast()
            }
            candidates.insert(site, at: candidates.firstIndex { site.directory < $0.directory } ?? candidates.endIndex)
        }
        var verdicts: [(identity: String, problem: String?)] = []
        var refused: Set<String> = []
        var passed: String?
        for files in candidates.lazy.compactMap(\.certificate) {
            // Known valid: it is the default.
            guard registry.isUnchecked(files.identity) else {
                passed = files.identity
                break
            }
            let problem = check(files)
            verdicts.append((identity: files.identity, problem: problem))
            if problem == nil {
                passed = files.identity
                break
            }
            refused.insert(files.identity)
        }
        // Recorded for the next start with the others, after readiness (`checkCertificatesLate`).
        if !verdicts.isEmpty { registry.settleCertificateChecks(verdicts, remembers: false) }
        guard let passed else { return (nil, []) }
        guard !refused.isEmpty else { return (passed, []) }
        return (passed, Set(snapshot.sites.values.lazy.filter { $0.certificateIdentity.map(refused.contains) == true }.map(\.directory)))
    }

    /// Whether a start checks the pairs the first load took unchecked before it is ready (few of
    /// them), checking them all; else, the default certificate's candidates
    /// (`checkDefaultCandidates`), timed: what that adds before readiness (docs/benchmarks.md),
    /// in CPU time too (this thread's alone), which a busy machine does not stretch.
    static func checkFirstLoadPairs(
        _ registry: SiteRegistry, logger: Logger
    ) -> (checksLate: Bool, passed: String?, failedEarly: Set<String>) {
        guard !checksCertificatesBeforeReady(unchecked: registry.uncheckedCertificateCount) else {
            registry.checkUncheckedCertificates()
            return (false, nil, [])
        }
        let began = (wall: DispatchTime.now().uptimeNanoseconds, cpu: threadCPUNanoseconds())
        let (passed, failedEarly) = checkDefaultCandidates(registry, check: ConfigLoading.check)
        // A clock_gettime that fails reads 0: the difference is clamped to 0, never trapping.
        let cpu = threadCPUNanoseconds()
        logger.info(
            "default certificate candidates checked before readiness",
            metadata: [
                "seconds": "\(Double(DispatchTime.now().uptimeNanoseconds - began.wall) / 1e9)",
                "cpuSeconds": "\(Double(cpu > began.cpu ? cpu - began.cpu : 0) / 1e9)",
            ])
        return (true, passed, failedEarly)
    }

    /// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0 else { return 0 }
        return UInt64(clamping: now.tv_sec) &* 1_000_000_000 &+ UInt64(clamping: now.tv_nsec)
    }

    /// Checks the pairs taken unchecked on every core, off the reloader (reloads go on
    /// meanwhile), then applies the verdicts under the registry's lock: sites whose pair fails
    /// are read again (a reload of those sites, published like any other), and the valid pairs
    /// are written with the other verdicts so that the next start trusts them.
    func checkCertificatesLate(
        _ sites: LockedRegistry, logger: Logger, serveReloaded: @escaping @Sendable (Snapshot, [String]?) -> Void
    ) {
        lateChecks.enter()
        DispatchQueue.global(qos: .utility).async { [self] in
            defer { lateChecks.leave() }
            let began = DispatchTime.now().uptimeNanoseconds
            let pairs = sites.withRegistry { $0.uncheckedCertificates }
            // A stop ends the checks at the next pair, and waits for those in flight (`stop`):
            // the process's exit tears OpenSSL's global state down, and a check still parsing
            // then crashed it (a stop during the 50,000 checks of a first start).
            let problems = Parallel.map(pairs, threshold: ConfigLoader.parallelThreshold) { files -> (checked: Bool, problem: String?) in
                guard !self.stopped.load(ordering: .acquiring) else { return (false, nil) }
                return (true, ConfigLoading.check(files))
            }
            // Every pair was checked unless a stop came (and `stopped` stays set once set).
            guard !self.stopped.load(ordering: .acquiring), problems.allSatisfy(\.checked) else { return }
            let verdicts = zip(pairs, problems).map { (identity: $0.identity, problem: $1.problem) }
            let refused = verdicts.count { $0.problem != nil }
            logger.info(
                "certificate pairs checked after start",
                metadata: [
                    "pairs": "\(pairs.count)", "refused": "\(refused)",
                    "seconds": "\(Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9)",
                ])
            // OpenSSL's parsing on every core leaves freed memory in per-thread malloc arenas.
            defer { Memory.trim() }
            if refused == 0 {
                sites.withRegistry { _ = $0.settleCertificateChecks(verdicts) }
                return
            }
            var names: [String] = []
            let snapshot = sites.reload { registry in
                names = registry.settleCertificateChecks(verdicts)
                return registry.snapshot
            }
            serveReloaded(snapshot, names)
        }
    }
}
