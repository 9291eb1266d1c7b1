import Logging
import Reactor

/// Why names under `sites/` are not sites, and why `sites/` itself could not be read: a listing
/// that failed (no `sites/`, one that cannot be listed) or a config root that no longer
/// resolves, and each name that cannot be a site (a bad name, a link out, an alias of no
/// directory). A failed listing and a name a reload finds bad are logged at each reload
/// (`record` with `logUnchanged`); an unreadable name and an unresolved root once per change.
/// `validate`, `sites` and `/sites` report them (`SiteRegistry.entryErrors`).
struct EntryProblems {
    /// Names under `sites/` that cannot be sites, with why.
    private(set) var byName: [String: ConfigProblem] = [:]
    /// Why `sites/` itself could not be listed at the last full reload, or why the config root
    /// could not be resolved since, if either.
    private(set) var directory: ConfigProblem?

    /// The entries `sites/` lists under `readRoot`, each with its type as readdir gives it (which
    /// orders a full load without an lstat a name: `ConfigLoader.directoriesFirst`); when it
    /// cannot be listed, says why (logged) and gives none. Known sites are still examined one by
    /// one after a failed listing; any that cannot be read keep their last good version.
    mutating func list(readRoot: String, logger: Logger) -> (entries: [Files.Entry], failed: Bool) {
        do {
            let entries = try Files.typedEntries(of: readRoot + "/sites")
            directory = nil
            return (entries, false)
        } catch {
            let problem: ConfigProblem
            switch ConfigLoader.examineKind(readRoot, "sites") {
            case .missing, .other:
                problem = ConfigProblem(
                    severity: .error, file: "sites",
                    message: "no sites/ directory; create sites/<host>/apple-app-site-association for each host")
            case .directory, .unreadable:
                problem = ConfigProblem(
                    severity: .error, file: "sites", message: "cannot list the directory: \(error.reason)")
            }
            logger.error("sites/: \(problem.message)")
            directory = problem
            return ([], true)
        }
    }

    /// The config directory `root` no longer resolves (`TreePin`): said once, until it changes.
    mutating func unresolved(root: String, reason: String, logger: Logger) {
        let problem = ConfigProblem(
            severity: .error, file: ".",
            message: "the config directory \(root) cannot be resolved (\(reason)); the sites loaded before stay in service")
        if directory != problem { logger.error("\(problem.message)") }
        directory = problem
    }

    /// The name cannot be a site, for `problem`: logged when it differs from what was said
    /// before, or always with `logUnchanged`.
    mutating func record(_ name: String, _ problem: ConfigProblem, logger: Logger, logUnchanged: Bool) {
        if logUnchanged || byName[name] != problem { logger.error("\(problem.file): \(problem.message)") }
        byName[name] = problem
    }

    /// The name was read again and is no longer a problem; true when it was one.
    mutating func forget(_ name: String) -> Bool { byName.removeValue(forKey: name) != nil }

    /// The problems as reported: `sites/` itself first, then the names' and `others` (aliases of
    /// no site, `aliases-allowed`), by file.
    func reported(with others: [ConfigProblem]) -> [ConfigProblem] {
        (directory.map { [$0] } ?? []) + (Array(byName.values) + others).sorted { $0.file < $1.file }
    }
}
