import Dispatch
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

    /// Checks the pairs taken unchecked on every core, off the reloader (reloads go on
    /// meanwhile), then applies the verdicts under the registry's lock: sites whose pair fails
    /// are read again (a reload of those sites, published like any other), and the valid pairs
    /// are written with the other verdicts so that the next start trusts them.
    func checkCertificatesLate(
        _ sites: LockedRegistry, logger: Logger, serveReloaded: @escaping @Sendable (Snapshot, [String]?) -> Void
    ) {
        DispatchQueue.global(qos: .utility).async { [self] in
            let began = DispatchTime.now().uptimeNanoseconds
            let pairs = sites.withRegistry { $0.uncheckedCertificates }
            let problems = Parallel.map(pairs, threshold: ConfigLoader.parallelThreshold) { ConfigLoading.check($0) }
            guard !self.stopped.load(ordering: .acquiring) else { return }
            let verdicts = zip(pairs, problems).map { (identity: $0.identity, problem: $1) }
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
