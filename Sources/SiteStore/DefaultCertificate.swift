import Logging
import Served

/// The default certificate: the pair in `tls/` at the top of the config directory, served for a
/// host whose site has none. A pair that cannot be read, or does not load, leaves the pair in
/// service as it is, as any other file keeps its last good version.
struct DefaultCertificate {
    /// What the last read found wrong.
    private(set) var problems: [ConfigProblem] = []
    /// Whether the last read found an error (in the files, or a pair that does not load).
    private(set) var failed = false

    /// Reads `tls/` under `readRoot` and returns the pair to serve: the one read, or `current`
    /// when it cannot be read or used. `check` is asked unless `validity` knows the pair.
    mutating func read(
        root readRoot: String, current: CertificateFiles?, validity: inout ValidityCache, late: LateCertificateChecks,
        check: SiteRegistry.CertificateCheck,
        logger: Logger
    ) -> CertificateFiles? {
        var problems: [ConfigProblem] = []
        var unreadable = false
        var files = ConfigLoader.readCertificate(readRoot, "tls", &problems, unreadable: &unreadable)
        for p in problems { logger.error("\(p.file): \(p.message)") }
        self.problems = problems
        failed = problems.contains { $0.severity == .error }
        if unreadable {
            logger.error("tls: cannot be read; keeping the previous default certificate")
            files = current
        }
        if let f = files, let problem = validity.certificateProblem(f, checked: nil, late: late, check: check) {
            failed = true
            logger.error("\(f.directory): \(problem); keeping the previous default certificate")
            files = current
        }
        return files
    }
}
