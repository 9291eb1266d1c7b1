import Reactor

/// Which replicas share the storage directory, and how far each has looked at the challenge
/// folders (docs/acme.md, "Several replicas, one order"):
///
/// ```text
/// <storage>/replicas/<id>   looks N: the looks at the challenge folders this replica's
///                           ChallengeBook has finished since it started
/// ```
///
/// A replica presenting a challenge waits, before the CA is told to come, until every other
/// replica's count has gone up by two since it stored the answer (`ChallengeBook.awaitOthers`),
/// and never longer than `ChallengeBook.propagationMilliseconds`. The count goes up only after
/// a look that read every answer in the folders; the first of the two may have listed them
/// before the answer was there, the second began after the first was written, so after the
/// answer was stored. A replica alone on its storage waits for nobody.
///
/// A replica that starts during an order writes its record before its first look, and makes
/// that look before it serves (`CertificateManager.init`): either the presenting replica lists
/// its record and waits for it, or the record came after the listing, so after the answer was
/// stored, and the first look finds the answer before any handshake can reach it.
///
/// Each record is rewritten after every look that found answers, and every `heartbeatSeconds`
/// otherwise; one not rewritten for `lifetime` (a replica that stopped without removing it) is
/// ignored and removed. A record that cannot be read, an entry that is not a record, and a
/// directory that cannot be listed or holds more than `maximumEntries` entries all count as a
/// replica that has not looked: the presenting replica waits the whole pause, as before there
/// were records.
package struct ReplicaPresence: Sendable {
    /// How long a record counts without being rewritten: ten heartbeats, so a volume stalled for
    /// minutes or clocks that disagree by minutes do not make a live replica look gone.
    package static let lifetime: Int64 = 600
    /// How often an idle replica rewrites its record.
    package static let heartbeatSeconds: Int64 = 60
    /// Entries of the directory read at most: replicas of one deployment, with room.
    package static let maximumEntries = 64
    /// Largest record read: one line of about 20 bytes.
    static let maximumRecordBytes = 64

    /// `<storage>/replicas`, made by `ACMEStorage`.
    package let directory: String
    /// This replica's record's name: random, so that replicas never share one.
    package let id: String

    package init(storage: ACMEStorage, id: String = randomHex(12)) {
        directory = storage.root + "/replicas"
        self.id = id
    }

    package var path: String { directory + "/" + id }

    package func write(looks: Int64) throws(ACMEError) {
        try AtomicFile.write(Array(RecordText.text([("looks", looks)]).utf8), to: path, mode: 0o600)
    }

    package func remove() { try? Files.remove(path) }

    /// The other replicas' counts of looks, by record name (nil for one that cannot be read: it
    /// has not looked, as far as anyone can tell); nil when the directory cannot be listed or
    /// holds more than `maximumEntries` entries. Records older than `lifetime` are left out and
    /// removed (unless rewritten since: `ReplicaRecords.removeIfUnchanged`), and so are
    /// temporary files of writes that stopped; a temporary file of a write under way is a
    /// replica's first record not yet in place, which its first look comes after.
    package func others(now: Int64) -> [String: Int64?]? {
        guard let entries = try? Files.entries(of: directory, limit: Self.maximumEntries + 1), entries.count <= Self.maximumEntries
        else { return nil }
        var others: [String: Int64?] = [:]
        for entry in entries where entry != id {
            let path = directory + "/" + entry
            guard let status = ReplicaRecords.linkStatus(path) else { continue }
            if entry.hasPrefix(".") {
                if status.kind == .regular && status.modified <= now - Self.lifetime { ReplicaRecords.removeIfUnchanged(path, status) }
                continue
            }
            if status.kind == .regular && status.modified <= now - Self.lifetime {
                ReplicaRecords.removeIfUnchanged(path, status)
                continue
            }
            guard status.kind == .regular, let bytes = try? Files.readFile(path, limit: Self.maximumRecordBytes),
                let values = RecordText.parse(bytes, keys: ["looks"])
            else {
                others[entry] = .some(nil)
                continue
            }
            others[entry] = values[0]
        }
        return others
    }
}
