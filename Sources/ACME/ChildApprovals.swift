import Glibc
public import Logging
import Reactor
import Synchronization

/// Wildcard children on demand (docs/acme.md, "Wildcard children"): the `ChildLedger` behind a
/// lock, and the askers, `ChildLedger.maximumAsksInFlight` threads of their own that take the
/// names waiting for an approval and ask about them (`ask`: the site's allow file, `acme.ask`'s
/// URL or program). A name approved becomes a child; the owner is told (`changed`) and makes it a
/// wanted name of the certificate manager, which orders it in the demanded tier.
///
/// Serving threads only call `offer` (one short lock; a new name also writes to the
/// askers' wake-up pipes): the handshake never waits for an ask or an order.
public final class ChildApprovals: Sendable {
    /// Asks whether `name` (a child of the wildcard site whose directory is `parent`) may have
    /// a certificate of its own. Blocking; on an asker's thread; `isCancelled` turns true when
    /// the askers stop (an ask over the network is cut short then).
    package typealias Ask = @Sendable (_ name: String, _ parent: String, _ isCancelled: @escaping @Sendable () -> Bool) -> Heard

    /// What an ask found.
    package struct Heard: Sendable, Equatable {
        package var answer: ChildLedger.Answer
        /// For the log: what was heard (a status, an exit status, a file's problem).
        package var detail: String
        /// The answer holds for every new name of the parent, not just this one: its allow file
        /// cannot be used, or nothing can approve for it (`ChildLedger.refusedParent`).
        package var wholeParent = false

        package init(_ answer: ChildLedger.Answer, _ detail: String, wholeParent: Bool = false) {
            self.answer = answer
            self.detail = detail
            self.wholeParent = wholeParent
        }
    }

    /// How often the askers look for children past their grace period.
    static let expiryIntervalMilliseconds: Int64 = 60_000
    /// How often the stale digested records are looked for (`ChildRecords.removeStaleDigested`):
    /// a listing of the children's folder, so not at every expiry.
    static let sweepIntervalMilliseconds: Int64 = 3_600_000
    /// How long an idle asker sleeps between looks when nothing wakes it.
    static let idleMilliseconds: Int64 = 1_000

    let ledger: Mutex<ChildLedger>
    let ask: Ask
    let clock: @Sendable () -> Int64
    /// Seconds since the epoch, for the records that outlive the process.
    let wallClock: @Sendable () -> Int64
    /// The children kept in storage (nil: in memory only).
    let records: ChildRecords?
    let logger: Logger
    /// Called (on an asker's thread) when the children changed: `added` are new children, to be
    /// wanted and demanded at once; removed ones are simply no longer in `children()`.
    let changed: Mutex<(@Sendable (_ added: [String]) -> Void)?>
    let wakeups: [Wakeup]
    /// `armed`: `start` was called; the threads are made at the first name to ask about (or at
    /// `start` when children were taken back from storage), so that a server without `per-name`
    /// sites runs none.
    let run = Mutex<(stopped: Bool, armed: Bool, threads: [LoopThread], nextExpiry: Int64, nextSweep: Int64)>((false, false, [], 0, 0))

    package init(
        childrenPerParent: Int, logger: Logger, records: ChildRecords? = nil,
        clock: @escaping @Sendable () -> Int64 = { MonotonicClock().milliseconds() },
        wallClock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }, ask: @escaping Ask
    ) throws(ACMEError) {
        ledger = Mutex(ChildLedger(childrenPerParent: childrenPerParent, now: clock()))
        self.ask = ask
        self.clock = clock
        self.wallClock = wallClock
        self.records = records
        self.logger = logger
        changed = Mutex(nil)
        var wakeups: [Wakeup] = []
        for _ in 0..<ChildLedger.maximumAsksInFlight {
            do {
                wakeups.append(try Wakeup())
            } catch {
                throw .storage("cannot make the askers' wake-up pipes: \(error.reason)")
            }
        }
        self.wakeups = wakeups
    }

    /// Sets what is called when the children change.
    package func onChange(_ body: @escaping @Sendable (_ added: [String]) -> Void) {
        changed.withLock { $0 = body }
    }

    // MARK: Serving threads

    /// A handshake asked for `name` under the wildcard site `parent` (see `ChildLedger.offer`).
    @discardableResult
    package func offer(_ name: String, parent: String) -> ChildLedger.Offer {
        let now = clock()
        let (offer, admitted) = ledger.withLock { ($0.offer(name, parent: parent, now: now), $0.hasAdmitted) }
        if offer == .queued || admitted {
            spawnIfNeeded()
            for wakeup in wakeups { wakeup.wake() }
        }
        return offer
    }

    /// Takes the children whose records the storage holds (`ChildRecords`, `ChildLedger.adopt`):
    /// those `parent(name)` still finds a `per-name` site for, seen within the grace period;
    /// the records of the others past it are removed. The number taken.
    @discardableResult
    package func adoptStored(parent: (String) -> String?) -> Int {
        guard let records else { return 0 }
        let now = clock()
        let wall = wallClock()
        let graceSeconds = ChildLedger.graceMilliseconds / 1_000
        records.removeStaleDigested(now: wall, olderThan: graceSeconds)
        var taken: [(name: String, parent: String, lastSeen: Int64, approvedUntil: Int64)] = []
        for (name, record) in records.all() {
            guard wall - record.lastSeen <= graceSeconds else {
                records.remove(name)
                continue
            }
            guard let parent = parent(name) else { continue }
            // Wall-clock seconds into this ledger's milliseconds; a time ahead of the clock is now.
            let lastSeen = now - max(0, wall - record.lastSeen) * 1_000
            let approvedUntil = now + max(0, min(record.approvedUntil - wall, ChildLedger.approvalMilliseconds / 1_000)) * 1_000
            taken.append((name, parent, lastSeen, approvedUntil))
        }
        return ledger.withLock { ledger in
            taken.count { ledger.adopt($0.name, parent: $0.parent, lastSeen: $0.lastSeen, approvedUntil: $0.approvedUntil, now: now) }
        }
    }

    // MARK: What the owner reads

    /// Every child and its parent (the wildcard site's directory).
    package func children() -> [(name: String, parent: String)] { ledger.withLock { $0.allChildren } }

    /// What `/sites` and metrics show.
    package struct Summary: Sendable, Equatable {
        package var children = 0
        package var pending = 0
        package var inFlight = 0
        package var answersKept = 0
        package var counters = ChildLedger.Counters()
        /// Parents refusing every new name now (a broken allow file, or nothing to approve), and why.
        package var refusing: [Refusing] = []
    }

    /// A parent refusing every new name, and why.
    package struct Refusing: Sendable, Equatable {
        package var parent: String
        package var detail: String
    }

    package func summary() -> Summary {
        let now = clock()
        return ledger.withLock { ledger in
            Summary(
                children: ledger.childCount, pending: ledger.pendingCount, inFlight: ledger.inFlight, answersKept: ledger.answerCount,
                counters: ledger.counters, refusing: ledger.refusing(now: now).map { Refusing(parent: $0.parent, detail: $0.detail) })
        }
    }

    // MARK: Askers

    /// Lets the askers run: at once when there are children (taken back from storage: their
    /// grace period is watched), else at the first name offered for an ask.
    package func start() {
        run.withLock { $0.armed = true }
        if ledger.withLock({ $0.childCount }) > 0 { spawnIfNeeded() }
    }

    /// The askers' threads running (0 until one is needed).
    package var threadCount: Int { run.withLock { $0.threads.count } }

    private func spawnIfNeeded() {
        run.withLock { run in
            guard run.armed, !run.stopped, run.threads.isEmpty else { return }
            for index in wakeups.indices { run.threads.append(LoopThread.spawn { [self] in work(index) }) }
        }
    }

    /// Stops the askers; an ask over the network under way is cut short (`isCancelled`); a
    /// program runs until it exits or its time limit.
    package func stop() {
        let threads = run.withLock { run -> [LoopThread] in
            run.stopped = true
            return run.threads
        }
        for wakeup in wakeups { wakeup.wake() }
        for thread in threads { thread.join() }
    }

    var stopped: Bool { run.withLock { $0.stopped } }

    private func work(_ index: Int) {
        while !stopped {
            // First, so that a steady stream of asks never holds the grace period back.
            if index == 0 { expireIfDue() }
            if step() { continue }
            wakeups[index].wait(milliseconds: Self.idleMilliseconds)
        }
    }

    /// One asker's turn: asks about the next name waiting, or announces the children admitted
    /// on serving threads; false when there was nothing to do. On an asker's thread (or a test's).
    func step() -> Bool {
        let next = ledger.withLock { $0.nextAsk(now: clock()) }
        guard let (name, parent) = next else {
            let admitted = ledger.withLock { $0.takeAdmitted() }
            guard !admitted.isEmpty else { return false }
            for name in admitted { record(name, answer: .yes, isChild: true) }
            changed.withLock { $0 }?(admitted)
            return true
        }
        let heard = ask(name, parent) { [self] in stopped }
        let answer = heard.answer
        let now = clock()
        let (childrenChanged, isChild) = ledger.withLock { ledger -> (Bool, Bool) in
            if heard.wholeParent {
                ledger.refusedParent(name, parent: parent, detail: heard.detail, now: now)
                return (false, ledger.isChild(name))
            }
            return (ledger.answered(name, parent: parent, answer, now: now), ledger.isChild(name))
        }
        // A whole parent's refusal keeps its children (and their records), as a failure does.
        record(name, answer: heard.wholeParent ? .failed : answer, isChild: isChild)
        let level: Logger.Level = answer == .failed || heard.wholeParent ? .warning : .info
        logger.log(
            level: level, heard.wholeParent ? "a wildcard site refuses every new child for now" : "a wildcard child was asked about",
            metadata: ["name": "\(name)", "site": "\(parent)", "answer": "\(answer.rawValue)", "heard": "\(heard.detail)"])
        if childrenChanged {
            let added = answer == .yes ? [name] : []
            if answer == .yes {
                logger.notice("a wildcard child was approved; it gets a certificate of its own", metadata: ["name": "\(name)"])
            }
            changed.withLock { $0 }?(added)
        }
        return true
    }

    /// Forgets the children past their grace period (and their records) when the last look is
    /// `expiryIntervalMilliseconds` old; removes stale digested records (which no child in the
    /// ledger may stand for: `adoptStored` never takes them) every `sweepIntervalMilliseconds`.
    func expireIfDue() {
        let now = clock()
        let (due, sweep) = run.withLock { run -> (Bool, Bool) in
            let sweep = now >= run.nextSweep
            if sweep { run.nextSweep = now + Self.sweepIntervalMilliseconds }
            guard now >= run.nextExpiry else { return (false, sweep) }
            run.nextExpiry = now + Self.expiryIntervalMilliseconds
            return (true, sweep)
        }
        if sweep { records?.removeStaleDigested(now: wallClock(), olderThan: ChildLedger.graceMilliseconds / 1_000) }
        guard due else { return }
        let gone = ledger.withLock { $0.expire(now: now) }
        guard !gone.isEmpty else { return }
        for name in gone { records?.remove(name) }
        logger.info(
            "wildcard children nobody asked for in the grace period are forgotten (not renewed)",
            metadata: ["count": "\(gone.count)", "first": "\(gone.first ?? "")"])
        changed.withLock { $0 }?([])
    }

    /// Keeps the storage's record of `name` in step with an answer: a yes for a child writes
    /// it (approved for a day from now, seen now), a no removes it, a failure leaves it.
    private func record(_ name: String, answer: ChildLedger.Answer, isChild: Bool) {
        guard let records else { return }
        switch answer {
        case .yes:
            guard isChild else { return }
            let wall = wallClock()
            do {
                try records.write(
                    name, ChildRecords.Record(approvedUntil: wall + ChildLedger.approvalMilliseconds / 1_000, lastSeen: wall))
            } catch {
                logger.warning(
                    "a wildcard child's record cannot be kept; a restart asks about it again",
                    metadata: ["name": "\(name)", "error": "\(error)"])
            }
        case .no: records.remove(name)
        case .failed: break
        }
    }
}
