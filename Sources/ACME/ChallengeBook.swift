import Logging
import Reactor
import Synchronization
public import TLS

/// The challenge answers pending in storage, mirrored in memory: handshakes and requests on the
/// serving loops look answers up here and never touch the filesystem (a stalled shared volume
/// must not stall a loop, and a client must not be able to make the server read files).
///
/// Answers this process presents are put in at once; answers another replica presents are found
/// by a look at the storage's challenge folders every `pollMilliseconds` on the book's own
/// thread. Before the CA is asked to validate, the presenting replica waits until every other
/// replica's book has looked twice since the answer was stored (`awaitOthers`,
/// `ReplicaPresence`), at most `propagationMilliseconds`; alone on its storage, it does not wait.
public final class ChallengeBook: Sendable {
    /// How often the storage's challenge folders are read (a directory listing each; a file read
    /// only for an answer not seen before).
    public static let pollMilliseconds: Int64 = 500
    /// What a presenting replica waits at most before the CA may come: two looks by every other
    /// replica, the wait when they cannot say they have looked.
    public static let propagationMilliseconds: Int64 = 2 * pollMilliseconds + 200
    /// How often a presenting replica reads the other replicas' counts of looks while it waits.
    public static let acknowledgementStepMilliseconds: Int64 = 50
    /// Challenge files older than this are left over from a replica that stopped mid-order (an
    /// order's polling lasts at most 5 minutes): removed, so the folders stay small.
    public static let staleSeconds: Int64 = 3600
    /// Answers read per look at most: a folder flooded by a broken replica cannot make one look
    /// (or the book) grow without bound.
    public static let maximumAnswers = 1000

    struct Entries: Sendable {
        /// By the name's storage component (`StorageName`): what a file name gives back, even
        /// for a name too long to be read back from it.
        var tlsALPN: [String: (source: TLSServer.CertificateSource, version: ACMEStorage.FileVersion?)] = [:]
        var http01: [String: (answer: [UInt8], version: ACMEStorage.FileVersion?)] = [:]
        var stopped = false
        var thread: LoopThread?
        /// Looks that read every answer, as last written for the other replicas, and when the
        /// record was last written (wall seconds).
        var looks: Int64 = 0
        var recordWrittenAt: Int64?
        /// Whether the last write of the record failed, and why the last pause ran its whole
        /// length (nil: it did not, or only for a replica that had not looked yet): each logged
        /// when it changes.
        var recordFailing = false
        var pauseTrouble: PauseTrouble?
    }

    /// Why a presenting replica waited the whole pause, when the records could not say.
    enum PauseTrouble: Equatable {
        case unlistable, tooMany, unreadable
    }

    let storage: ACMEStorage
    let entries = Mutex(Entries())
    let wakeup: Wakeup
    /// This replica's record among those sharing the storage.
    let presence: ReplicaPresence
    let logger: Logger?

    init(storage: ACMEStorage, logger: Logger? = nil) throws(ACMEError) {
        self.storage = storage
        self.logger = logger
        presence = ReplicaPresence(storage: storage)
        do {
            wakeup = try Wakeup()
        } catch {
            throw .storage("cannot make the challenge book's wake-up pipe: \(error.reason)")
        }
    }

    /// The TLS-ALPN-01 certificate pending for `name`.
    public func tlsALPN(for name: String) -> TLSServer.CertificateSource? {
        guard let component = try? StorageName.component(name) else { return nil }
        return entries.withLock { $0.tlsALPN[component]?.source }
    }

    /// The HTTP-01 key authorization pending for `token`.
    public func http01(token: String) -> [UInt8]? { entries.withLock { $0.http01[token]?.answer } }

    /// An answer this process just stored.
    func addTLSALPN(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        guard let component = try? StorageName.component(name) else { return }
        let source = Self.source(name: name, chainPEM: chainPEM, keyPEM: keyPEM)
        entries.withLock { $0.tlsALPN[component] = (source, nil) }
    }

    func addHTTP01(token: String, answer: [UInt8]) { entries.withLock { $0.http01[token] = (answer, nil) } }

    func removeTLSALPN(name: String) {
        guard let component = try? StorageName.component(name) else { return }
        entries.withLock { $0.tlsALPN[component] = nil }
    }

    func removeHTTP01(token: String) { entries.withLock { $0.http01[token] = nil } }

    /// A challenge certificate as the TLS layer takes it: a new identity for new bytes, so a
    /// context cached for an earlier challenge is never served for a later one.
    static func source(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) -> TLSServer.CertificateSource {
        TLSServer.CertificateSource(
            identity: "acme-tls/1 " + ACMEStorage.identity(chainPEM: chainPEM, keyPEM: keyPEM), chainPEM: chainPEM, keyPEM: keyPEM,
            label: "tls-alpn-01 challenge for \(name)")
    }

    /// Brings the book in line with the storage folders: new or replaced files read, vanished
    /// ones dropped (answers this process added and has not yet seen on disk are kept). Then
    /// tells the other replicas (`acknowledge`).
    func poll(now: Int64 = WallClock.seconds()) {
        let root = storage.root + "/challenges"
        // Listed up to the bound, not whole and then cut: a folder of a million names costs its
        // first `maximumAnswers` every poll.
        let listedTokens = try? Files.entries(of: root + "/http-01", limit: Self.maximumAnswers)
        let listedNames = try? Files.entries(of: root + "/tls-alpn-01", limit: Self.maximumAnswers)
        let tokens = listedTokens ?? []
        let names = listedNames ?? []
        // Whether this look read every answer there is: what the other replicas are told.
        var complete = listedTokens != nil && listedNames != nil && tokens.count < Self.maximumAnswers && names.count < Self.maximumAnswers
        var seenTokens = Set<String>()
        for token in tokens where !token.hasPrefix(".") {
            guard let path = storage.http01Path(for: token), let status = try? Files.status(path), status.kind == .regular else { continue }
            if status.modified < now - Self.staleSeconds {
                try? Files.remove(path)
                continue
            }
            seenTokens.insert(token)
            let version = ACMEStorage.FileVersion(status)
            if entries.withLock({ $0.http01[token]?.version }) == version { continue }
            guard let answer = storage.http01Answer(token: token) else {
                complete = false
                continue
            }
            entries.withLock { $0.http01[token] = (answer, version) }
        }
        var seenNames = Set<String>()
        for file in names where file.hasSuffix(".pem") && !file.hasPrefix(".") {
            let component = String(file.dropLast(4))
            guard StorageName.isDigested(component) || StorageName.name(ofReadable: component) != nil else { continue }
            let path = storage.tlsALPNChallengePath(component: component)
            guard let status = try? Files.status(path), status.kind == .regular else { continue }
            if status.modified < now - Self.staleSeconds {
                try? Files.remove(path)
                continue
            }
            seenNames.insert(component)
            let version = ACMEStorage.FileVersion(status)
            if entries.withLock({ $0.tlsALPN[component]?.version }) == version { continue }
            guard let pair = storage.tlsALPNChallenge(path: path) else {
                complete = false
                continue
            }
            let name = StorageName.name(ofReadable: component) ?? component
            let source = Self.source(name: name, chainPEM: pair.chainPEM, keyPEM: pair.keyPEM)
            entries.withLock { $0.tlsALPN[component] = (source, version) }
        }
        entries.withLock { entries in
            for (token, entry) in entries.http01 where entry.version != nil && !seenTokens.contains(token) { entries.http01[token] = nil }
            for (component, entry) in entries.tlsALPN where entry.version != nil && !seenNames.contains(component) {
                entries.tlsALPN[component] = nil
            }
        }
        acknowledge(complete: complete, found: !seenTokens.isEmpty || !seenNames.isEmpty, now: now)
    }

    /// After a look: one more look written for the other replicas when it read every answer and
    /// found some (a replica presenting one waits for it), or when the record is due its
    /// heartbeat (`ReplicaPresence.heartbeatSeconds`). The count goes up only with a write that
    /// succeeded, one by one, so the second count another replica sees after reading one came
    /// from a look that began after that read. A write that fails is tried again at the next
    /// look; meanwhile the others wait for this replica the whole pause (logged once, and once
    /// more when a write succeeds again).
    func acknowledge(complete: Bool, found: Bool, now: Int64) {
        let looks = entries.withLock { entries -> Int64? in
            let due = entries.recordWrittenAt.map { now - $0 >= ReplicaPresence.heartbeatSeconds || now < $0 } ?? true
            guard (complete && found) || due else { return nil }
            return entries.looks + (complete ? 1 : 0)
        }
        guard let looks else { return }
        let failure: ACMEError?
        do {
            try presence.write(looks: looks)
            failure = nil
        } catch {
            failure = error
        }
        let changed = entries.withLock { entries -> Bool in
            if failure == nil {
                entries.looks = looks
                entries.recordWrittenAt = now
            }
            defer { entries.recordFailing = failure != nil }
            return entries.recordFailing != (failure != nil)
        }
        guard changed else { return }
        if let failure {
            logger?.warning(
                "this replica's record cannot be written: the other replicas wait the whole pause before each validation",
                metadata: ["path": "\(presence.path)", "error": "\(failure)"])
        } else {
            logger?.notice("this replica's record is written again", metadata: ["path": "\(presence.path)"])
        }
    }

    /// Called by the replica presenting an answer it has just stored, before the CA is told to
    /// come: pauses until every other replica sharing the storage has finished two looks since
    /// (`ReplicaPresence`), `propagationMilliseconds` at most. Returns at once when no other
    /// replica has a record. A pause that runs its whole length because the records cannot say
    /// (`PauseTrouble`) is logged when the reason changes, not at each order.
    func awaitOthers(pause: (Duration) -> Void, now: () -> Int64 = { WallClock.seconds() }) {
        let bound = Self.propagationMilliseconds
        let step = Self.acknowledgementStepMilliseconds
        var listing = presence.others(now: now())
        guard case .records(var waiting) = listing else {
            pause(.milliseconds(bound))
            note(listing == .unlistable ? .unlistable : .tooMany)
            return
        }
        var waited: Int64 = 0
        while !waiting.isEmpty && waited < bound {
            pause(.milliseconds(min(step, bound - waited)))
            waited += step
            listing = presence.others(now: now())
            guard case .records(let seen) = listing else { continue }
            waiting = waiting.filter { id, before in
                // Gone: stopped (a replica removes its record once it no longer serves) or
                // expired; not readable or not yet looked twice: still waited for.
                guard let current = seen[id] else { return false }
                guard let before, let current else { return true }
                return current < before + 2
            }
        }
        switch listing {
        case .unlistable: note(waiting.isEmpty ? nil : .unlistable)
        case .tooMany: note(waiting.isEmpty ? nil : .tooMany)
        case .records(let seen):
            // A replica that has not looked twice yet (stopped without removing its record,
            // or slow) is what the pause is for: not a trouble.
            note(waiting.keys.contains { seen[$0] == .some(nil) } ? .unreadable : nil)
        }
    }

    /// Logs why the pause ran its whole length when that changed since the last pause.
    func note(_ trouble: PauseTrouble?) {
        let changed = entries.withLock { entries -> Bool in
            defer { entries.pauseTrouble = trouble }
            return entries.pauseTrouble != trouble
        }
        guard changed else { return }
        let directory = ["directory": Logger.MetadataValue.string(presence.directory)]
        switch trouble {
        case nil:
            logger?.notice("the pause before validation ends with the other replicas' looks again", metadata: directory)
        case .unlistable:
            logger?.warning(
                "the replicas' records cannot be listed: each validation waits the whole pause", metadata: directory)
        case .tooMany:
            logger?.warning(
                "more than \(ReplicaPresence.maximumEntries) entries among the replicas' records: each validation waits the whole pause until those of stopped replicas are removed",
                metadata: directory)
        case .unreadable:
            logger?.warning(
                "a replica's record cannot be read (not a file of one line \"looks N\"): each validation waits the whole pause",
                metadata: directory)
        }
    }

    /// Writes this replica's record, then looks at the folders once: before the server serves
    /// (`ReplicaPresence` says why in that order).
    func announce() {
        acknowledge(complete: false, found: false, now: WallClock.seconds())
        poll()
    }

    func start() {
        // Written again by the process as it runs (its first may have been written before
        // privileges were dropped).
        entries.withLock { $0.recordWrittenAt = nil }
        poll()
        let thread = LoopThread.spawn { [self] in
            while !entries.withLock({ $0.stopped }) {
                wakeup.wait(milliseconds: Self.pollMilliseconds)
                poll()
            }
        }
        entries.withLock { $0.thread = thread }
    }

    func stop() {
        let thread = entries.withLock { entries -> LoopThread? in
            entries.stopped = true
            return entries.thread
        }
        wakeup.wake()
        thread?.join()
        presence.remove()
    }
}
