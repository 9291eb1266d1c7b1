/// The bookkeeping of a wildcard site's children (docs/acme.md, "Wildcard children"): which names
/// under a `per-name` wildcard site (`alice.users.example.com` under `*.users.example.com`) have
/// been approved and get a certificate of their own, which are waiting for an approval (`ask`),
/// and the caches, rates and caps that keep a flood of random SNI names from turning into a
/// flood of approvals asked for or orders placed. A pure value: every call takes the time
/// (milliseconds, never going back), so tests drive it with plain numbers.
///
/// The way in (`offer`) runs on serving threads for any name a client sends under such a site:
/// a few hash look-ups and, for a name asked about for the first time, a token from two rate
/// buckets. Nothing waits for the answer: the handshake gets the current certificate, and a
/// child's own is served on a later handshake once it is issued.
///
/// Caddy (through certmagic's on-demand decision) asks its `ask` endpoint at every handshake for
/// a name it holds no certificate for, holds the handshake while it asks and orders, and caches
/// no answer (Caddy's
/// modules/caddytls/ondemand.go; caddyserver/caddy#6245 asks for a cache, and Caddy's
/// on-demand `rate_limit` is deprecated, leaving limits to the endpoint). Here every answer is cached
/// (yes and no, each with its lifetime), asks are rate-limited per parent and in all, at most
/// `maximumAsksInFlight` run at once, an `ask` that fails pauses all asks, and a flood only costs
/// the ask budget: it never reaches the CA, whose orders only approved children get.
package struct ChildLedger: Sendable {
    /// What an approval said.
    package enum Answer: String, Sendable, Equatable, CaseIterable {
        /// `ask` answered 200, the program exited 0, or the site's allow file lists the name.
        case yes
        /// Any other answer: another status (a redirect is not followed), another exit status,
        /// a name the allow file does not list.
        case no
        /// No answer: a timeout, a refused connection, a 5xx, a program that could not run or was
        /// killed, an allow file that cannot be read. A no as well, kept for a shorter time, and
        /// all asks pause for a while (an `ask` that is down is not hammered).
        case failed
    }

    /// Why an offer was not asked about now; each is a metrics label (a fixed set).
    package enum Drop: String, Sendable, Equatable, CaseIterable {
        /// The global or the parent's ask rate is spent (or, for an approved name, its rate of
        /// new children).
        case rate
        /// `maximumPendingAsks` names wait already.
        case full
        /// Asks are paused after a failed one.
        case paused
        /// The parent has `childrenPerParent` children, or all parents `maximumChildren`.
        case capped
    }

    /// What `offer` did with a name.
    package enum Offer: Sendable, Equatable {
        /// An approved child: it is (or will be) ordered and served a certificate of its own.
        case child
        /// Refused by a cached answer (no, or failed): nothing asked.
        case refused
        /// Already waiting for its answer.
        case asking
        /// Queued for an ask: the caller wakes the askers.
        case queued
        /// Not asked about now, and nothing kept: the client's next handshake offers it again.
        case dropped(Drop)
    }

    // MARK: Bounds

    /// Asks running at once, at most: the askers' threads. An `ask` that answers slowly (up to
    /// `ChildAsk.timeoutMilliseconds`) holds one each, so at most this many wait on it.
    package static let maximumAsksInFlight = 4
    /// Names waiting for an asker, at most: a name offered while it is full is dropped (and
    /// offered again at the client's next handshake). The rates below keep it short; this bounds
    /// it whatever they are.
    package static let maximumPendingAsks = 64
    /// Asks for new names, in all: a burst of `askBurst`, then `asksPerMinute` (one a second).
    /// A platform adds users by the minute, not by the second; a scanner's 100,000 random names
    /// cost one ask a second whatever its rate.
    package static let askBurst = 20
    package static let asksPerMinute = 60
    /// Asks for one parent's new names: a burst of 10, then 20 a minute, so one tenant's
    /// wildcard being scanned leaves the rest of the global rate to the others.
    package static let parentAskBurst = 10
    package static let parentAsksPerMinute = 20
    /// Approved names that become children, in all: a burst of 20, then 600 an hour. Each child
    /// costs an order (within `acme.orders-per-hour`, which the CA's limits set): an `ask` that
    /// says yes to everything is bounded here before the order budget is.
    package static let newChildrenBurst = 20
    package static let newChildrenPerHour = 600
    /// Approved names that become one parent's children: a burst of 10, then 60 an hour.
    package static let parentNewChildrenBurst = 10
    package static let parentNewChildrenPerHour = 60
    /// How long a yes is kept: a day. A child is asked about again at its first handshake after
    /// that (in the background; it stays a child until a no), so a user removed from the
    /// platform stops being renewed within a day of its next visit.
    package static let approvalMilliseconds: Int64 = 86_400_000
    /// How long a no is kept: an hour. A name refused (a scanner's, a user not yet created) is
    /// not asked about again for an hour, however often it is sent.
    package static let refusalMilliseconds: Int64 = 3_600_000
    /// How long a failed ask counts as a no: a minute, so an `ask` back up is heard soon.
    package static let failureMilliseconds: Int64 = 60_000
    /// After a failed ask, all asks pause: 5 s, doubling with each failure in a row, up to 5
    /// minutes. An `ask` that is down gets about one call per pause, not one per handshake.
    package static let failurePauseFirstMilliseconds: Int64 = 5_000
    package static let failurePauseMostMilliseconds: Int64 = 300_000
    /// Answers kept, at most: the oldest goes first. At one ask a second it holds 18 hours of
    /// answers; about 100 bytes each, 6.5 MB in all.
    package static let maximumAnswers = 65_536
    /// Children in all, at most: each is a wanted name (an order, a certificate in storage and
    /// in memory). A platform with more users than this serves the rest the parent's current
    /// certificate (the default pair, or the development one).
    package static let maximumChildren = 10_000
    /// A child that no handshake asked for in 30 days is forgotten: no longer wanted, so not
    /// renewed (Let's Encrypt's 90-day certificates are renewed at 60 days: a user gone for a
    /// month costs no more orders).
    package static let graceMilliseconds: Int64 = 30 * 86_400_000

    // MARK: State

    /// A child: its parent (the wildcard site's directory), and when a handshake last asked for it.
    package struct Child: Sendable, Equatable {
        package var parent: String
        package var lastSeen: Int64
    }

    /// What the ledger has counted since it was made (metrics and `/sites`).
    package struct Counters: Sendable, Equatable {
        package var asks: [Answer: Int] = [:]
        package var dropped: [Drop: Int] = [:]
        /// Offers answered from the cache without asking (a refused name sent again).
        package var cached = 0
        /// Children forgotten after the grace period, or on a no.
        package var forgotten = 0
    }

    private struct Cached: Sendable {
        var answer: Answer
        var expires: Int64
    }

    /// A parent's children at most (`acme.names-per-site`: a wildcard site's children are its
    /// names, each a certificate of its own).
    package let childrenPerParent: Int
    private(set) var children: [String: Child] = [:]
    private var perParent: [String: Int] = [:]
    private var answers: [String: Cached] = [:]
    /// `answers`' names, oldest first from `answerHead` (a queue without moving its elements).
    private var answerOrder: [String] = []
    private var answerHead = 0
    private(set) var pending: [(name: String, parent: String)] = []
    /// Names pending or being asked about.
    private var asking: Set<String> = []
    private(set) var inFlight = 0
    private var asks: TokenBucket
    private var newChildren: TokenBucket
    private var parentAsks: [String: TokenBucket] = [:]
    private var parentNewChildren: [String: TokenBucket] = [:]
    private var pausedUntil: Int64 = 0
    private var failuresInARow = 0
    package private(set) var counters = Counters()

    package init(childrenPerParent: Int, now: Int64) {
        self.childrenPerParent = max(1, childrenPerParent)
        asks = TokenBucket(burst: Self.askBurst, per: Self.asksPerMinute, milliseconds: 60_000, now: now)
        newChildren = TokenBucket(burst: Self.newChildrenBurst, per: Self.newChildrenPerHour, milliseconds: 3_600_000, now: now)
    }

    /// Every child and its parent.
    package var allChildren: [(name: String, parent: String)] { children.map { ($0.key, $0.value.parent) } }
    package var childCount: Int { children.count }
    package var pendingCount: Int { pending.count }
    package var answerCount: Int { answers.count }

    // MARK: Serving threads

    /// A handshake asked for `name` under the wildcard site `parent` (checked by the caller: a
    /// name in normal form, one label under the site's wildcard, no other site's, no pair of its
    /// own or the default's covering it).
    package mutating func offer(_ name: String, parent: String, now: Int64) -> Offer {
        if var child = children[name] {
            child.lastSeen = now
            children[name] = child
            // A yes that has run out is asked again, the child staying one meanwhile.
            if let cached = answer(for: name, now: now), cached == .yes { return .child }
            if !asking.contains(name) { _ = queue(name, parent: parent, now: now) }
            return .child
        }
        if let cached = answer(for: name, now: now) {
            if cached == .yes {
                if let drop = admit(name, parent: parent, now: now) { return note(.dropped(drop)) }
                return .child
            }
            counters.cached += 1
            return .refused
        }
        if asking.contains(name) { return .asking }
        return queue(name, parent: parent, now: now)
    }

    /// Takes `name` as a child without asking: at start, for a name whose certificate the storage
    /// holds (it was approved before the restart, here or on a replica sharing the storage), so
    /// that a restart never leaves children on the default certificate while they wait their turn
    /// for an ask. The caps apply; the rates do not (nothing is ordered: the certificate exists).
    /// No yes is cached, so the child's first handshake asks about it again in the background,
    /// and a no then forgets it. False when a cap refused it.
    package mutating func adopt(_ name: String, parent: String, now: Int64) -> Bool {
        if children[name] != nil { return true }
        guard children.count < Self.maximumChildren, perParent[parent, default: 0] < childrenPerParent else { return false }
        children[name] = Child(parent: parent, lastSeen: now)
        perParent[parent, default: 0] += 1
        return true
    }

    // MARK: Askers

    /// The next name to ask about, or nil when none waits or `maximumAsksInFlight` run.
    package mutating func nextAsk() -> (name: String, parent: String)? {
        guard inFlight < Self.maximumAsksInFlight, !pending.isEmpty else { return nil }
        inFlight += 1
        return pending.removeFirst()
    }

    /// The answer about `name`; true when the children changed (one added, or one removed by a no).
    package mutating func answered(_ name: String, parent: String, _ answer: Answer, now: Int64) -> Bool {
        inFlight = max(0, inFlight - 1)
        asking.remove(name)
        counters.asks[answer, default: 0] += 1
        switch answer {
        case .yes:
            failuresInARow = 0
            remember(name, .yes, until: now + Self.approvalMilliseconds)
            if children[name] != nil { return false }
            if let drop = admit(name, parent: parent, now: now) {
                counters.dropped[drop, default: 0] += 1
                return false
            }
            return true
        case .no:
            failuresInARow = 0
            remember(name, .no, until: now + Self.refusalMilliseconds)
            return forget(name)
        case .failed:
            // A child stays one while its `ask` is down: an outage of the platform's API must not
            // take certificates away.
            remember(name, .failed, until: now + Self.failureMilliseconds)
            failuresInARow += 1
            let shift = Int64(min(failuresInARow - 1, 16))
            pausedUntil = now + min(Self.failurePauseFirstMilliseconds << shift, Self.failurePauseMostMilliseconds)
            return false
        }
    }

    /// Forgets children no handshake asked for within the grace period; returns their names.
    package mutating func expire(now: Int64) -> [String] {
        let gone = children.filter { now - $0.value.lastSeen > Self.graceMilliseconds }.map(\.key)
        for name in gone { _ = forget(name) }
        return gone
    }

    // MARK: Inside

    private mutating func note(_ offer: Offer) -> Offer {
        if case .dropped(let drop) = offer { counters.dropped[drop, default: 0] += 1 }
        return offer
    }

    private func answer(for name: String, now: Int64) -> Answer? {
        guard let cached = answers[name], cached.expires > now else { return nil }
        return cached.answer
    }

    private mutating func queue(_ name: String, parent: String, now: Int64) -> Offer {
        guard now >= pausedUntil else { return note(.dropped(.paused)) }
        guard pending.count < Self.maximumPendingAsks else { return note(.dropped(.full)) }
        var parentBucket =
            parentAsks[parent] ?? TokenBucket(burst: Self.parentAskBurst, per: Self.parentAsksPerMinute, milliseconds: 60_000, now: now)
        // Both buckets must have a token before either is spent: a parent over its rate does not
        // use up the global one, nor the reverse.
        guard parentBucket.has(now: now), asks.has(now: now) else {
            parentAsks[parent] = parentBucket
            return note(.dropped(.rate))
        }
        parentBucket.take()
        asks.take()
        parentAsks[parent] = parentBucket
        pending.append((name, parent))
        asking.insert(name)
        return .queued
    }

    /// Makes an approved name a child; the reason when it cannot be one now.
    private mutating func admit(_ name: String, parent: String, now: Int64) -> Drop? {
        guard children.count < Self.maximumChildren, perParent[parent, default: 0] < childrenPerParent else { return .capped }
        var parentBucket =
            parentNewChildren[parent]
            ?? TokenBucket(burst: Self.parentNewChildrenBurst, per: Self.parentNewChildrenPerHour, milliseconds: 3_600_000, now: now)
        guard parentBucket.has(now: now), newChildren.has(now: now) else {
            parentNewChildren[parent] = parentBucket
            return .rate
        }
        parentBucket.take()
        newChildren.take()
        parentNewChildren[parent] = parentBucket
        children[name] = Child(parent: parent, lastSeen: now)
        perParent[parent, default: 0] += 1
        return nil
    }

    private mutating func forget(_ name: String) -> Bool {
        guard let child = children.removeValue(forKey: name) else { return false }
        let left = perParent[child.parent, default: 1] - 1
        perParent[child.parent] = left > 0 ? left : nil
        counters.forgotten += 1
        return true
    }

    private mutating func remember(_ name: String, _ answer: Answer, until expires: Int64) {
        if answers.updateValue(Cached(answer: answer, expires: expires), forKey: name) == nil {
            answerOrder.append(name)
        }
        while answers.count > Self.maximumAnswers, answerHead < answerOrder.count {
            answers[answerOrder[answerHead]] = nil
            answerHead += 1
        }
        // The queue's dead front is dropped once it is half of it: amortised O(1) per answer.
        if answerHead > answerOrder.count / 2 {
            answerOrder.removeFirst(answerHead)
            answerHead = 0
        }
    }
}

/// A token bucket: `burst` tokens, refilled at `per` tokens every `milliseconds`.
package struct TokenBucket: Sendable, Equatable {
    let burst: Double
    let perMillisecond: Double
    private var tokens: Double
    private var last: Int64

    package init(burst: Int, per: Int, milliseconds: Int64, now: Int64) {
        self.burst = Double(max(1, burst))
        perMillisecond = Double(max(0, per)) / Double(max(1, milliseconds))
        tokens = self.burst
        last = now
    }

    /// Refills to `now`; whether a token is there.
    package mutating func has(now: Int64) -> Bool {
        if now > last {
            tokens = min(burst, tokens + Double(now - last) * perMillisecond)
            last = now
        }
        return tokens >= 1
    }

    /// Spends a token (after `has` said one is there).
    package mutating func take() { tokens = max(0, tokens - 1) }
}
