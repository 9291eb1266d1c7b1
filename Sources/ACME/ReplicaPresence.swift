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
/// ignored and removed. Old means old by the reader's clock and by the directory's modification
/// time, which the last record renamed into place set (the clock that stamps the storage's
/// files): a reader whose clock runs ahead neither ignores nor removes a live record, and one
/// whose clock runs behind waits for a stopped replica up to that much longer. Writers whose
/// clocks disagree by more than `lifetime`, on a filesystem that stamps files with the
/// writer's clock, are the bound: their records may look stopped to each other.
///
/// A record that cannot be read, an entry that is not a record (a directory, a link, a file
/// that does not parse), and a directory that cannot be listed or holds more than
/// `maximumEntries` entries all count as a replica that has not looked: the presenting replica
/// waits the whole pause, as before there were records, and says why in its log once
/// (`ChallengeBook.awaitOthers`). Names starting with "." are no record: temporary files of
/// writes (`ReplicaRecords.isTemporary`) are removed once old, any other (a network
/// filesystem's `.nfs…` file of a record replaced while open) is left alone; a name that is
/// not valid UTF-8 (never a record's: ids are hex) cannot be read or removed by the name it
/// is listed as, and is left alone too. Neither is waited for.
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

    /// What a look at the directory found.
    package enum Listing: Equatable, Sendable {
        /// The other replicas' counts of looks, by record name (nil for one that cannot be read:
        /// it has not looked, as far as anyone can tell).
        case records([String: Int64?])
        /// The directory could not be listed.
        case unlistable
        /// The directory holds more than `maximumEntries` entries.
        case tooMany
    }

    /// The other replicas' records (`Listing`). Records old by both clocks (the type's header)
    /// are left out and removed (unless rewritten since: `ReplicaRecords.removeIfUnchanged`),
    /// and so are old temporary files of writes that stopped, among the entries listed even
    /// when there are more than `maximumEntries` (the only place where they are removed: a
    /// directory filled by replicas that stopped is emptied by the next looks); a temporary
    /// file of a write under way is a replica's first record not yet in place, which its
    /// first look comes after.
    package func others(now: Int64) -> Listing {
        guard let entries = try? Files.entries(of: directory, limit: Self.maximumEntries + 1) else { return .unlistable }
        // The storage's clock, as the last record written set it; nil: no removal.
        let stamped = ReplicaRecords.linkStatus(directory)?.modified
        func stopped(_ status: FileStatus) -> Bool {
            guard let stamped, status.kind == .regular else { return false }
            return Self.isOld(status.modified, at: now) && Self.isOld(status.modified, at: stamped)
        }
        let over = entries.count > Self.maximumEntries
        var others: [String: Int64?] = [:]
        for entry in entries where entry != id {
            if entry.hasPrefix(".") || entry.unicodeScalars.contains("\u{FFFD}") {
                if ReplicaRecords.isTemporary(entry), let status = ReplicaRecords.linkStatus(directory + "/" + entry), stopped(status) {
                    ReplicaRecords.removeIfUnchanged(directory + "/" + entry, status)
                }
                continue
            }
            let path = directory + "/" + entry
            guard let status = ReplicaRecords.linkStatus(path) else { continue }
            if stopped(status) {
                ReplicaRecords.removeIfUnchanged(path, status)
                continue
            }
            // Over the bound the result is `tooMany` whatever the records say: only cleaned.
            if over { continue }
            guard status.kind == .regular, let bytes = try? Files.readFile(path, limit: Self.maximumRecordBytes),
                let values = RecordText.parse(bytes, keys: ["looks"])
            else {
                others[entry] = .some(nil)
                continue
            }
            others[entry] = values[0]
        }
        return over ? .tooMany : .records(others)
    }

    /// Whether a time stamped `modified` is `lifetime` or more before `now` (times from a file's
    /// status, any value: never a trap).
    static func isOld(_ modified: Int64, at now: Int64) -> Bool {
        let (age, overflow) = now.subtractingReportingOverflow(modified)
        return !overflow && age >= lifetime
    }
}
