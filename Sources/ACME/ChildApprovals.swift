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
    /// a certificate of its own. Blocking; on an asker's thread.
    package typealias Ask = @Sendable (_ name: String, _ parent: String) -> (answer: ChildLedger.Answer, detail: String)

    /// How often the askers look for children past their grace period.
    static let expiryIntervalMilliseconds: Int64 = 60_000
    /// How long an idle asker sleeps between looks when nothing wakes it.
    static let idleMilliseconds: Int64 = 1_000

    let ledger: Mutex<ChildLedger>
    let ask: Ask
    let clock: @Sendable () -> Int64
    let logger: Logger
    /// Called (on an asker's thread) when the children changed: `added` are new children, to be
    /// wanted and demanded at once; removed ones are simply no longer in `children()`.
    let changed: Mutex<(@Sendable (_ added: [String]) -> Void)?>
    let wakeups: [Wakeup]
    let run = Mutex<(stopped: Bool, threads: [LoopThread], nextExpiry: Int64)>((false, [], 0))

    package init(
        childrenPerParent: Int, logger: Logger, clock: @escaping @Sendable () -> Int64 = { MonotonicClock().milliseconds() },
        ask: @escaping Ask
    ) throws(ACMEError) {
        ledger = Mutex(ChildLedger(childrenPerParent: childrenPerParent, now: clock()))
        self.ask = ask
        self.clock = clock
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
        let offer = ledger.withLock { $0.offer(name, parent: parent, now: now) }
        if offer == .queued { for wakeup in wakeups { wakeup.wake() } }
        return offer
    }

    /// Takes children whose certificates the storage holds (`ChildLedger.adopt`); the number taken.
    @discardableResult
    package func adopt(_ stored: [(name: String, parent: String)]) -> Int {
        let now = clock()
        return ledger.withLock { ledger in stored.count { ledger.adopt($0.name, parent: $0.parent, now: now) } }
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
    }

    package func summary() -> Summary {
        ledger.withLock { ledger in
            Summary(
                children: ledger.childCount, pending: ledger.pendingCount, inFlight: ledger.inFlight, answersKept: ledger.answerCount,
                counters: ledger.counters)
        }
    }

    // MARK: Askers

    package func start() {
        var threads: [LoopThread] = []
        for index in wakeups.indices { threads.append(LoopThread.spawn { [self] in work(index) }) }
        run.withLock { $0.threads = threads }
    }

    /// Stops the askers; an ask under way is cut short (`isCancelled`).
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
            if let (name, parent) = ledger.withLock({ $0.nextAsk() }) {
                let (answer, detail) = ask(name, parent)
                let now = clock()
                let childrenChanged = ledger.withLock { $0.answered(name, parent: parent, answer, now: now) }
                let level: Logger.Level = answer == .failed ? .warning : .info
                logger.log(
                    level: level, "a wildcard child was asked about",
                    metadata: ["name": "\(name)", "site": "\(parent)", "answer": "\(answer.rawValue)", "heard": "\(detail)"])
                if childrenChanged {
                    let added = answer == .yes ? [name] : []
                    if answer == .yes {
                        logger.notice("a wildcard child was approved; it gets a certificate of its own", metadata: ["name": "\(name)"])
                    }
                    changed.withLock { $0 }?(added)
                }
                continue
            }
            if index == 0 { expireIfDue() }
            wakeups[index].wait(milliseconds: Self.idleMilliseconds)
        }
    }

    private func expireIfDue() {
        let now = clock()
        let due = run.withLock { run -> Bool in
            guard now >= run.nextExpiry else { return false }
            run.nextExpiry = now + Self.expiryIntervalMilliseconds
            return true
        }
        guard due else { return }
        let gone = ledger.withLock { $0.expire(now: now) }
        guard !gone.isEmpty else { return }
        logger.info(
            "wildcard children nobody asked for in the grace period are forgotten (not renewed)",
            metadata: ["count": "\(gone.count)", "first": "\(gone.first ?? "")"])
        changed.withLock { $0 }?([])
    }
}
