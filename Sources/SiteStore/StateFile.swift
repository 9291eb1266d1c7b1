import Logging

/// One of the server's state files (`served-first`, `validated-contents`) kept in step with what
/// it records: written only when the record's version differs from the one last written (a reload
/// that changed nothing writes nothing), and a failure to write said once, not at every reload,
/// until a write succeeds again. Serving never depends on the file: a failure costs the next start
/// what the file would have saved it, so it is a warning and serving goes on.
struct StateFile<Version: Equatable> {
    let path: String
    /// What is lost when the file cannot be written, for the warning ("cannot keep …").
    let keeps: String
    /// The version last written (or read, at start).
    private(set) var stored: Version
    /// Whether a failed write was logged already.
    private(set) var writeFailed = false

    init(path: String, stored: Version, keeps: String) {
        self.path = path
        self.stored = stored
        self.keeps = keeps
    }

    /// Writes through `write` (given the path) when `version` is not the one last written; says
    /// the first failure of a run of them.
    mutating func keep<Failure: Error>(_ version: Version, logger: Logger, write: (String) throws(Failure) -> Void) {
        guard version != stored else { return }
        do throws(Failure) {
            try write(path)
            stored = version
            writeFailed = false
        } catch {
            if !writeFailed {
                logger.warning("cannot keep \(keeps) for the next start", metadata: ["path": "\(path)", "error": "\(error)"])
            }
            writeFailed = true
        }
    }
}
