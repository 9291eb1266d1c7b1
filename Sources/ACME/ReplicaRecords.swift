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
/// host name names a file; a name too long to be read back from its file name (a digested
/// component) is listed by its component, which the reader matches against its own names
/// (`CertificateManager.shareDemand`). Every write is atomic (`AtomicFile`); every read is bounded
/// (`maximumRecordBytes`), never follows a symbolic link and never blocks on a FIFO
/// (`Files.readFile`), and is parsed strictly (`RecordText`, the values in RecordValues.swift):
/// a file that is not a record is treated as absent, which costs at most one order or the
/// demand's place, never a trap or an unbounded wait (`BackoffRecord.effectiveNextAttempt`,
/// `DemandRecord.demandTime` clamp what they read). A record is removed only if it is still the
/// file that was read (`removeIfUnchanged`), never another replica's fresh one renamed into
/// place meanwhile.
package struct ReplicaRecords: Sendable {
    /// Largest record read: three lines of about 25 bytes.
    package static let maximumRecordBytes = 256
    /// Demand records kept at most (the regular files and links at a record's name counted;
    /// another replica's temporary file, a name that is not a record's and a directory are not):
    /// a replica that finds this many writes no new one (its own demand still counts in its own
    /// tiers), and each look at storage reads at most this many. At the default 60 orders an
    /// hour, 256 demanded names are more than four hours of orders, and reading them costs a
    /// few milliseconds on a local disk, about a quarter of a second on a network volume, every
    /// `CertificateManager.Configuration.rescanInterval`.
    package static let maximumDemandRecords = 256
    /// Entries of the demand directory listed at most: the records' bound and as many again of
    /// what is no record (temporary files of writes under way, stray names), which are neither
    /// read nor counted. A directory holding more counts as full, so that nothing this code
    /// writes makes it grow past the bound however much else is in it.
    package static let maximumDemandEntries = 2 * maximumDemandRecords
    /// A temporary file (`.<name>.tmp-<random>`, `Files.replaceAtomically`) older than this was
    /// left by a writer that stopped between its create and its rename (a write takes
    /// milliseconds; a volume stalled for minutes is still far from it), and is removed.
    package static let temporaryLifetime: Int64 = 3_600
    /// How far ahead of the reader's clock a failure's time may be (`BackoffRecord`).
    package static let clockSkewTolerance = BackoffRecord.clockSkewTolerance
    /// How long a demand record counts without being written again (`DemandRecord`).
    package static let demandLifetime = DemandRecord.lifetime
    /// Demand records one site's names may hold at once (those a replica knows of: its own
    /// and those it read): a site's own domain, www and a few regional or campaign domains,
    /// with room. One tenant asking for all of a site's names (up to `acme.names-per-site`,
    /// 100 by default) then takes 16 of the 256 records, not 100.
    package static let maximumDemandRecordsPerSite = 16
    /// How long after a name was last asked for its demand record is still written: a name
    /// asked for once and never served (an order the CA keeps refusing) frees its record a
    /// day later plus `demandLifetime`, instead of holding it for good. Asked for again, it is
    /// written again.
    package static let maximumDemandAge: Int64 = 86_400

    /// A failed order as written by the replica that placed it (RecordValues.swift).
    package typealias Failure = BackoffRecord

    /// `<storage>/backoff` and `<storage>/demand`, made by `ACMEStorage`.
    package let backoffDirectory: String
    package let demandDirectory: String

    /// Called in `demands` between a bad or expired record's read and its removal, with its
    /// path: where tests put another replica's fresh record, to see it spared.
    package var beforeRemoval: @Sendable (String) -> Void = { _ in }

    package init(storage: ACMEStorage) {
        backoffDirectory = storage.root + "/backoff"
        demandDirectory = storage.root + "/demand"
    }

    // MARK: - Back-off

    package func writeFailure(_ name: String, _ failure: Failure) throws(ACMEError) {
        try AtomicFile.write(Array(failure.text.utf8), to: backoffDirectory + "/" + (try StorageName.component(name)), mode: 0o600)
    }

    /// `name`'s back-off record, or nil when there is none or the file is not one.
    package func failure(_ name: String) -> Failure? {
        read(backoffDirectory, name).flatMap(Failure.init(parsing:))
    }

    package func removeFailure(_ name: String) { remove(backoffDirectory, name) }

    // MARK: - Demand

    package func writeDemand(_ name: String, at time: Int64) throws(ACMEError) {
        let path = demandDirectory + "/" + (try StorageName.component(name))
        try AtomicFile.write(Array(DemandRecord.text(time).utf8), to: path, mode: 0o600)
    }

    package func removeDemand(_ name: String) { remove(demandDirectory, name) }

    /// The demand records in the directory (`maximumDemandRecords` says what counts), up to
    /// that bound: whether a new record may be written. A directory that cannot be listed, or
    /// holds more than `maximumDemandEntries` entries, counts as full. Each entry's type is
    /// readdir's (`Files.typedEntries`), looked up with an lstat only where the file system
    /// gives none.
    package func demandRecordCount() -> Int {
        guard let entries = try? Files.typedEntries(of: demandDirectory, limit: Self.maximumDemandEntries + 1),
            entries.count <= Self.maximumDemandEntries
        else { return Self.maximumDemandRecords }
        var count = 0
        for entry in entries where count < Self.maximumDemandRecords && Self.recordName(entry.name) != nil {
            // readdir's type where the file system gives one; an lstat where it does not.
            let kind = entry.kind ?? Self.linkStatus(demandDirectory + "/" + entry.name)?.kind
            if kind != .directory { count += 1 }
        }
        return count
    }

    /// The names with a live demand record and since when they were asked for (`demandTime`),
    /// a digested component standing for its name (`StorageName.isDigested`),
    /// from the first `maximumDemandEntries` entries of the directory, `maximumDemandRecords`
    /// records read at most. Expired records and files at a record's name that are not records
    /// are removed (an unlink never follows a link, and spares a file renamed there since it was
    /// read: `removeIfUnchanged`), and so are temporary files older than `temporaryLifetime`; a
    /// directory, a name that is not valid UTF-8 and any other stray name are left alone.
    package func demands(now: Int64) -> [String: Int64] {
        guard let entries = try? Files.entries(of: demandDirectory, limit: Self.maximumDemandEntries) else { return [:] }
        var live: [String: Int64] = [:]
        var parsed = 0
        for entry in entries {
            let path = demandDirectory + "/" + entry
            guard let name = Self.recordName(entry) else {
                if Self.isTemporary(entry), let status = Self.linkStatus(path), status.kind == .regular,
                    status.modified <= now - Self.temporaryLifetime
                {
                    Self.removeIfUnchanged(path, status)
                }
                continue
            }
            guard parsed < Self.maximumDemandRecords else { break }
            guard let before = Self.linkStatus(path), before.kind != .directory else { continue }
            parsed += 1
            guard let recorded = read(path).flatMap(DemandRecord.parse),
                let time = DemandRecord.demandTime(recorded, now: now)
            else {
                beforeRemoval(path)
                Self.removeIfUnchanged(path, before)
                continue
            }
            live[name] = time
        }
        return live
    }

    /// The host name a directory entry is the record of (`_wildcard_.` spelling a wildcard),
    /// the entry itself when it is a digested component, or nil for anything else: a temporary
    /// file, a name that is not valid UTF-8 (listed with U+FFFD in it), a stray name.
    static func recordName(_ entry: String) -> String? {
        StorageName.isDigested(entry) ? entry : StorageName.name(ofReadable: entry)
    }

    /// Whether an entry is named as `Files.replaceAtomically`'s temporary files are (and
    /// listed as it is named: valid UTF-8, so the name reaches the file).
    static func isTemporary(_ entry: String) -> Bool {
        entry.hasPrefix(".") && entry.contains(".tmp-") && !entry.unicodeScalars.contains("\u{FFFD}")
    }

    /// Unlinks `path` when it is still the file `before` describes (the same inode and device,
    /// and modification time to the nanosecond): a file another replica renamed into place
    /// since (a fresh record, which always has a new inode) stays. The window left is the one
    /// between this look and the unlink, microseconds instead of a whole read.
    static func removeIfUnchanged(_ path: String, _ before: FileStatus) {
        guard let now = linkStatus(path), now.inode == before.inode, now.device == before.device,
            now.modifiedNanoseconds == before.modifiedNanoseconds
        else { return }
        try? Files.remove(path)
    }

    /// `lstat` of `path`, nil when it cannot be looked at.
    static func linkStatus(_ path: String) -> FileStatus? { try? Files.linkStatus(path) }

    // MARK: - Files

    /// The bytes of `name`'s record in `directory`, bounded, without following a link.
    private func read(_ directory: String, _ name: String) -> [UInt8]? {
        guard let component = try? StorageName.component(name) else { return nil }
        return read(directory + "/" + component)
    }

    private func read(_ path: String) -> [UInt8]? { try? Files.readFile(path, limit: Self.maximumRecordBytes) }

    private func remove(_ directory: String, _ name: String) {
        guard let component = try? StorageName.component(name) else { return }
        try? Files.remove(directory + "/" + component)
    }
}
