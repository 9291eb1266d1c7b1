/// The records replicas keep in the storage directory (ReplicaRecords.swift, ChildRecords.swift)
/// as values: their text (`RecordText`), their strict parse, and what a reader makes of the
/// times in them. No file I/O, so that the `acme` fuzz target (Fuzz/FuzzACME.swift, `ACMEFuzz`)
/// runs exactly this code over hostile record files.

/// `<storage>/backoff/<name>`: a failed order as written by the replica that placed it, times on
/// its own clock.
package struct BackoffRecord: Sendable, Equatable {
    /// The record's keys, in order (`RecordText`).
    static let keys = ["failed-at", "failures", "next-attempt"]
    /// How far ahead of the reader's clock a failure's time may be and still count as written:
    /// the drift NTP-synchronised machines may show, with room. A record further ahead was
    /// written by a clock that runs fast, or is read by one that runs slow; a wait counted from
    /// a time that stays ahead of this clock would start again at every read, so the reader
    /// writes the record again on its own clock (`rebased`).
    package static let clockSkewTolerance: Int64 = 300

    package var failedAt: Int64
    package var failures: Int
    package var nextAttempt: Int64

    package init(failedAt: Int64, failures: Int, nextAttempt: Int64) {
        self.failedAt = failedAt
        self.failures = failures
        self.nextAttempt = nextAttempt
    }

    /// The record's text (a value is written clamped to 0...`RecordText.maximumValue`).
    var text: String { RecordText.text([("failed-at", failedAt), ("failures", Int64(failures)), ("next-attempt", nextAttempt)]) }

    /// The record `bytes` spell exactly, or nil when they are not one.
    init?(parsing bytes: [UInt8]) {
        guard let values = RecordText.parse(bytes, keys: Self.keys) else { return nil }
        // Twelve digits fit an Int on the 64-bit platforms aasad runs on; never a trap elsewhere.
        self.init(failedAt: values[0], failures: Int(truncatingIfNeeded: values[1]), nextAttempt: values[2])
    }

    /// When a replica whose clock reads `now` may order again after `failure`: the failure's
    /// time plus the wait the writer set (`nextAttempt - failedAt`, both on its clock), never
    /// longer than `Backoff.longestWait`; nil when the failure's time is more than
    /// `clockSkewTolerance` ahead of `now` (then the reader writes it again: `rebased`). The
    /// answer is the same at every read, so a writer's clock that runs ahead holds a name back
    /// by its wait and the tolerance at most, once; one that runs behind makes the wait shorter.
    package static func effectiveNextAttempt(_ failure: Self, now: Int64) -> Int64? {
        let ahead = failure.failedAt.subtractingReportingOverflow(now)
        guard ahead.overflow ? failure.failedAt < now : ahead.partialValue <= clockSkewTolerance else { return nil }
        return adding(wait(failure), to: failure.failedAt)
    }

    /// `failure` as the reader whose clock reads `now` writes it again when its time is past
    /// `clockSkewTolerance` ahead: failed now, with the writer's wait (cut as
    /// `effectiveNextAttempt` cuts it) and its failures. The wait then holds once, from this
    /// read, and is never counted again from a time ahead; the count carries on (the next
    /// failure anywhere is one more), where removing the record would let the reader order at
    /// once and start the count over.
    package static func rebased(_ failure: Self, now: Int64) -> Self {
        Self(failedAt: now, failures: max(failure.failures, 0), nextAttempt: adding(wait(failure), to: now))
    }

    /// The wait the writer set, never negative nor longer than `Backoff.longestWait`.
    private static func wait(_ failure: Self) -> Int64 {
        let wait = failure.nextAttempt.subtractingReportingOverflow(failure.failedAt)
        return wait.overflow ? Backoff.longestWait : min(max(wait.partialValue, 0), Backoff.longestWait)
    }

    private static func adding(_ wait: Int64, to time: Int64) -> Int64 {
        let next = time.addingReportingOverflow(wait)
        return next.overflow ? .max : next.partialValue
    }
}

/// `<storage>/demand/<name>`: `demanded-at T`, someone asked a replica for this name at T (the
/// writer's clock).
package enum DemandRecord {
    /// How long a demand record counts without being written again. The replica that saw the
    /// demand rewrites it every half of this while it holds the name as demanded; a record left
    /// by a replica that stopped, or whose name was served or left the config meanwhile,
    /// expires after it, and the name goes back to its place in the queue.
    package static let lifetime: Int64 = 3_600

    static func text(_ time: Int64) -> String { RecordText.text([("demanded-at", time)]) }

    /// The time `bytes` record exactly, or nil when they are not a demand record.
    static func parse(_ bytes: [UInt8]) -> Int64? { RecordText.parse(bytes, keys: ["demanded-at"])?.first }

    /// Since when a name recorded as asked for at `recorded` (another replica's clock) counts as
    /// demanded here; nil once the record has expired (`lifetime`). A time ahead of `now` (a
    /// clock running fast) counts as `now`, and expires as if written up to `lifetime` ahead at
    /// most: a record cannot stay live for longer than two lifetimes.
    package static func demandTime(_ recorded: Int64, now: Int64) -> Int64? {
        let (earliest, early) = now.subtractingReportingOverflow(lifetime)
        let (latest, late) = now.addingReportingOverflow(lifetime)
        guard early || recorded > earliest, late || recorded < latest else { return nil }
        return min(recorded, now)
    }
}

/// `<storage>/children/<name>`: a wildcard child's last approval and last use, in seconds since
/// the epoch (ChildRecords.swift).
package struct ChildRecord: Sendable, Equatable {
    package var approvedUntil: Int64
    package var lastSeen: Int64

    package init(approvedUntil: Int64, lastSeen: Int64) {
        self.approvedUntil = approvedUntil
        self.lastSeen = lastSeen
    }

    var text: String { RecordText.text([("approved-until", approvedUntil), ("last-seen", lastSeen)]) }

    /// Exactly `text`'s form: two lines, each a key, one space, 1 to `RecordText.maximumDigits`
    /// digits; nil for anything else.
    init?(parsing bytes: [UInt8]) {
        guard let values = RecordText.parse(bytes, keys: ["approved-until", "last-seen"]) else { return nil }
        self.init(approvedUntil: values[0], lastSeen: values[1])
    }
}
