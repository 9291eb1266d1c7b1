import Reactor

/// What replicas sharing the storage directory tell each other about a name besides its
/// certificate and its lock (docs/acme.md, "Several replicas, one order"):
///
/// ```text
/// <storage>/backoff/<name>   failed-at T, failures N, next-attempt T: a failed order's back-off
/// <storage>/demand/<name>    demanded-at T: someone asked a replica for this name
/// ```
///
/// A failed order's back-off is written by the replica that failed it (under the name's lock)
/// and read by whichever replica takes the lock next, before it places an order, so a name the
/// CA refuses costs one order per back-off step across all replicas, not one per replica. A
/// demand record is written by the replica a handshake reached and read by every replica at its
/// look at storage, so whichever replica orders next puts the name in the demanded tier.
///
/// File names are `StorageName` components (as certificates' and locks'), so only a checked
/// host name names a file. Every write is atomic (`AtomicFile`); every read is bounded
/// (`maximumRecordBytes`), never follows a symbolic link and never blocks on a FIFO
/// (`Files.readFile`), and is parsed strictly (`RecordText`): a file that is not a record is
/// treated as absent, which costs at most one order or the demand's place, never a trap or an
/// unbounded wait (`effectiveNextAttempt`, `demandTime` clamp what they read).
package struct ReplicaRecords: Sendable {
    /// Largest record read: three lines of about 25 bytes.
    package static let maximumRecordBytes = 256
    /// Demand records kept at most (the directory's entries counted, a stray file included): a
    /// replica that finds this many writes no new one (its own demand still counts in its own
    /// tiers), and each look at storage reads at most this many. At the default 60 orders an
    /// hour, 256 demanded names are more than four hours of orders, and reading them costs a
    /// few milliseconds on a local disk, about a quarter of a second on a network volume, every
    /// `CertificateManager.Configuration.rescanInterval`.
    package static let maximumDemandRecords = 256
    /// How long a demand record counts without being written again. The replica that saw the
    /// demand rewrites it every half of this while it holds the name as demanded; a record left
    /// by a replica that stopped, or whose name was served or left the config meanwhile,
    /// expires after it, and the name goes back to its place in the queue.
    package static let demandLifetime: Int64 = 3_600

    /// A failed order as written by the replica that placed it, times on its own clock.
    package struct Failure: Sendable, Equatable {
        package var failedAt: Int64
        package var failures: Int
        package var nextAttempt: Int64

        package init(failedAt: Int64, failures: Int, nextAttempt: Int64) {
            self.failedAt = failedAt
            self.failures = failures
            self.nextAttempt = nextAttempt
        }
    }

    /// `<storage>/backoff` and `<storage>/demand`, made by `ACMEStorage`.
    package let backoffDirectory: String
    package let demandDirectory: String

    package init(storage: ACMEStorage) {
        backoffDirectory = storage.root + "/backoff"
        demandDirectory = storage.root + "/demand"
    }

    // MARK: - Back-off

    package func writeFailure(_ name: String, _ failure: Failure) throws(ACMEError) {
        let text = RecordText.text([
            ("failed-at", failure.failedAt), ("failures", Int64(failure.failures)), ("next-attempt", failure.nextAttempt),
        ])
        try AtomicFile.write(Array(text.utf8), to: backoffDirectory + "/" + (try StorageName.component(name)), mode: 0o600)
    }

    /// `name`'s back-off record, or nil when there is none or the file is not one.
    package func failure(_ name: String) -> Failure? {
        guard let values = read(backoffDirectory, name, keys: ["failed-at", "failures", "next-attempt"]) else { return nil }
        // Twelve digits fit an Int on the 64-bit platforms aasad runs on; never a trap elsewhere.
        return Failure(failedAt: values[0], failures: Int(truncatingIfNeeded: values[1]), nextAttempt: values[2])
    }

    package func removeFailure(_ name: String) { remove(backoffDirectory, name) }

    /// When a replica whose clock reads `now` may order again after `failure`: the wait the
    /// writer set (`nextAttempt - failedAt`, both on its clock, so skew between the two clocks
    /// plays no part) counted from the failure or from `now`, whichever is earlier, and never
    /// longer than `Backoff.longestWait`. A writer's clock that runs ahead cannot hold a name
    /// back longer than its wait; one that runs behind makes the wait shorter (one more order).
    package static func effectiveNextAttempt(_ failure: Failure, now: Int64) -> Int64 {
        let wait = failure.nextAttempt.subtractingReportingOverflow(failure.failedAt)
        let clamped = wait.overflow ? Backoff.longestWait : min(max(wait.partialValue, 0), Backoff.longestWait)
        return min(failure.failedAt, now) + clamped
    }

    // MARK: - Demand

    package func writeDemand(_ name: String, at time: Int64) throws(ACMEError) {
        let text = RecordText.text([("demanded-at", time)])
        try AtomicFile.write(Array(text.utf8), to: demandDirectory + "/" + (try StorageName.component(name)), mode: 0o600)
    }

    package func removeDemand(_ name: String) { remove(demandDirectory, name) }

    /// The files in the demand directory, counted up to `maximumDemandRecords`: whether a new
    /// record may be written.
    package func demandRecordCount() -> Int {
        (try? Files.entries(of: demandDirectory, limit: Self.maximumDemandRecords).count) ?? Self.maximumDemandRecords
    }

    /// The names with a live demand record and since when they were asked for (`demandTime`),
    /// from the first `maximumDemandRecords` entries of the directory. Expired records and
    /// files at a record's name that are not records are removed (an unlink never follows a
    /// link); anything else (another replica's temporary file, a stray name) is left alone.
    package func demands(now: Int64) -> [String: Int64] {
        guard let entries = try? Files.entries(of: demandDirectory, limit: Self.maximumDemandRecords) else { return [:] }
        var live: [String: Int64] = [:]
        for entry in entries {
            let name = entry.hasPrefix("_wildcard_.") ? "*." + entry.dropFirst("_wildcard_.".count) : entry
            guard (try? StorageName.component(name)) == entry else { continue }
            guard let values = read(demandDirectory, name, keys: ["demanded-at"]), let time = Self.demandTime(values[0], now: now) else {
                try? Files.remove(demandDirectory + "/" + entry)
                continue
            }
            live[name] = time
        }
        return live
    }

    /// Since when a name recorded as asked for at `recorded` (another replica's clock) counts as
    /// demanded here; nil once the record has expired (`demandLifetime`). A time ahead of `now`
    /// (a clock running fast) counts as `now`, and expires as if written up to `demandLifetime`
    /// ahead at most: a record cannot stay live for longer than two lifetimes.
    package static func demandTime(_ recorded: Int64, now: Int64) -> Int64? {
        guard recorded > now - demandLifetime, recorded < now + demandLifetime else { return nil }
        return min(recorded, now)
    }

    // MARK: - Files

    private func read(_ directory: String, _ name: String, keys: [String]) -> [Int64]? {
        guard let component = try? StorageName.component(name),
            let bytes = try? Files.readFile(directory + "/" + component, limit: Self.maximumRecordBytes)
        else { return nil }
        return RecordText.parse(bytes, keys: keys)
    }

    private func remove(_ directory: String, _ name: String) {
        guard let component = try? StorageName.component(name) else { return }
        try? Files.remove(directory + "/" + component)
    }
}
