import Reactor

/// Wildcard children kept in the storage directory (`<storage>/children/<name>`, one small file
/// each), so that a restart brings back the children approved and still in use, and no others:
/// a child refused or past its grace period has its record removed, and a certificate left in
/// `certificates/` (storage never deletes one) is not a child without its record. A record
/// holds two times, in seconds since the epoch (wall clock: it outlives the process), one a line:
/// `approved-until N` (its last yes, plus `ChildLedger.approvalMilliseconds`) and `last-seen N`
/// (written with each yes, so at most a day behind the handshakes that asked for it). Written
/// atomically (`AtomicFile`, as every other storage file), read without following a symlink and
/// bounded, parsed strictly: anything else is not a record.
package struct ChildRecords: Sendable {
    /// Largest record read: two lines of about 30 bytes.
    package static let maximumRecordBytes = 256
    /// Records read at start, at most: the children a server holds (`ChildLedger.maximumChildren`);
    /// the rest of a larger folder is left unread.
    package static let maximumRecords = ChildLedger.maximumChildren
    /// Digits of a time at most (`RecordText`).
    static let maximumDigits = RecordText.maximumDigits

    /// Digested records removed per pass at most (`removeStaleDigested`).
    package static let maximumStaleRemovals = 64

    /// A child's record (RecordValues.swift).
    package typealias Record = ChildRecord

    /// `<storage>/children`, made by `ACMEStorage`.
    package let directory: String

    package init(storage: String) { directory = storage + "/children" }

    package func write(_ name: String, _ record: Record) throws(ACMEError) {
        let path = directory + "/" + (try StorageName.component(name))
        try AtomicFile.write(Array(record.text.utf8), to: path, mode: 0o600)
    }

    package func remove(_ name: String) {
        guard let component = try? StorageName.component(name) else { return }
        try? Files.remove(directory + "/" + component)
    }

    package func read(_ name: String) -> Record? {
        guard let component = try? StorageName.component(name),
            let bytes = try? Files.readFile(directory + "/" + component, limit: Self.maximumRecordBytes)
        else { return nil }
        return Record(parsing: bytes)
    }

    /// Every readable record, at most `maximumRecords`, by name; a file that is not one (a
    /// temporary file, a wildcard's, a bad record) is skipped, and so is the record of a name
    /// too long for its readable file name (`StorageName`), which gives no name back: that
    /// child is asked for again at its next handshake.
    package func all() -> [(name: String, record: Record)] {
        guard let entries = try? Files.entries(of: directory) else { return [] }
        var found: [(String, Record)] = []
        for entry in entries.sorted() where found.count < Self.maximumRecords {
            guard (try? StorageName.component(entry)) == entry, !entry.hasPrefix("_wildcard_"), let record = read(entry) else {
                continue
            }
            found.append((entry, record))
        }
        return found
    }

    /// Removes the digested records (`StorageName.isDigested`: a name too long for a readable file
    /// name) whose file was last written more than `seconds` before `now`, at most
    /// `maximumStaleRemovals` a pass; the number removed. Such a record gives no name back, so
    /// `all` never takes it and a restart never removes it past the grace period as it removes
    /// the others; without this it would stay for good once its child is forgotten. Judged by the
    /// modification time the storage host set (a live child's record is written again with each
    /// yes, at least daily), never following a link (only a regular file is removed), and sparing
    /// a record written there since it was looked at (`ReplicaRecords.removeIfUnchanged`).
    @discardableResult
    package func removeStaleDigested(now: Int64, olderThan seconds: Int64) -> Int {
        guard let entries = try? Files.entries(of: directory) else { return 0 }
        var removed = 0
        for entry in entries where removed < Self.maximumStaleRemovals && StorageName.isDigested(entry) {
            let path = directory + "/" + entry
            guard let status = ReplicaRecords.linkStatus(path), status.kind == .regular, status.modified < now - seconds else { continue }
            ReplicaRecords.removeIfUnchanged(path, status)
            removed += 1
        }
        return removed
    }
}
