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
/// no answer (Caddy's modules/caddytls/ondemand.go in github.com/caddyserver/caddy: a request
/// for a cache there was answered by caching in the endpoint, and Caddy's on-demand
/// `rate_limit` is deprecated, leaving limits to the endpoint). Here every answer is cached
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
        /// No answer from `acme.ask`: a timeout, a refused connection, a 5xx, a program that could
        /// not run or was killed. A no as well, kept for a shorter time, and all asks pause for a
        /// while (an `ask` that is down is not hammered). A parent's own allow file that cannot
        /// be used is not this: it is that parent's no (`refusedParent`), and pauses no one else.
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
        /// Offers refused without asking: a refused name sent again (from the cache), or a name of
        /// a parent refusing every new name for now (`refusedParent`).
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
    /// Names waiting for an ask, by parent; the parents in turn (`nextAsk` takes one name of
    /// the first and puts it at the end while it has more), so tokens go round the parents.
    private var pendingByParent: [String: [String]] = [:]
    private var pendingParents: [String] = []
    private var pendingTotal = 0
    /// Parents whose new names are refused without an ask until a time: their allow file cannot
    /// be used, or nothing can approve for them (no allow file, no `acme.ask`). What was found,
    /// for `/sites`.
    private var refusingParents: [String: (until: Int64, detail: String)] = [:]
    /// Names pending or being asked about.
    private var asking: Set<String> = []
    private(set) var inFlight = 0
    private var asks: TokenBucket
    private var newChildren: TokenBucket
    private var parentAsks: [String: TokenBucket] = [:]
    /// Names the parents' ask rates turned away, known again when offered again.
    private var turnedAway = TurnedAwayNames()
    private var parentNewChildren: [String: TokenBucket] = [:]
    private var pausedUntil: Int64 = 0
    private var failuresInARow = 0
    /// Names admitted by `offer` not yet taken (`takeAdmitted`); at most `maximumChildren`, as
    /// each is a child.
    private var admitted: [String] = []
    package private(set) var counters = Counters()

    package init(childrenPerParent: Int, now: Int64) {
        self.childrenPerParent = max(1, childrenPerParent)
        asks = TokenBucket(burst: Self.askBurst, per: Self.asksPerMinute, milliseconds: 60_000, now: now)
        newChildren = TokenBucket(burst: Self.newChildrenBurst, per: Self.newChildrenPerHour, milliseconds: 3_600_000, now: now)
    }

    /// Every child and its parent.
    package var allChildren: [(name: String, parent: String)] { children.map { ($0.key, $0.value.parent) } }
    package var childCount: Int { children.count }
    package var pendingCount: Int { pendingTotal }
    /// Parents refusing every new name now, and why (at most `maximumRefusingParentsShown`, by
    /// name).
    package func refusing(now: Int64) -> [(parent: String, detail: String)] {
        let live = refusingParents.filter { $0.value.until > now }.sorted { $0.key < $1.key }
        return live.prefix(Self.maximumRefusingParentsShown).map { ($0.key, $0.value.detail) }
    }
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
                admitted.append(name)
                return .child
            }
            counters.cached += 1
            return .refused
        }
        if asking.contains(name) { return .asking }
        if parentRefuses(parent, now: now) {
            counters.cached += 1
            return .refused
        }
        return queue(name, parent: parent, now: now)
    }

    /// Takes `name` as a child without asking: at start, for a child whose record the storage
    /// holds (`ChildRecords`: approved before the restart, here or on a replica sharing the
    /// storage, and seen within the grace period), so that a restart never leaves children on the
    /// default certificate while they wait their turn for an ask. `lastSeen` is the record's (in
    /// this ledger's time): the grace period goes on from it. `approvedUntil`, when still ahead,
    /// is cached as a yes; without it the child's first handshake asks about it again in the
    /// background, and a no then forgets it. The caps apply; the rates do not. False when a cap
    /// refused it.
    package mutating func adopt(_ name: String, parent: String, lastSeen: Int64, approvedUntil: Int64? = nil, now: Int64) -> Bool {
        if children[name] != nil { return true }
        guard children.count < Self.maximumChildren, perParent[parent, default: 0] < childrenPerParent else { return false }
        children[name] = Child(parent: parent, lastSeen: min(lastSeen, now))
        perParent[parent, default: 0] += 1
        if let approvedUntil, approvedUntil > now { remember(name, .yes, until: min(approvedUntil, now + Self.approvalMilliseconds)) }
        return true
    }

    /// Whether `name` is a child now.
    package func isChild(_ name: String) -> Bool { children[name] != nil }

    /// Children made on a serving thread (a yes kept past a rate, taken at a later handshake)
    /// since the last call: the askers announce them (wanted, demanded, recorded).
    package mutating func takeAdmitted() -> [String] {
        defer { admitted = [] }
        return admitted
    }
    package var hasAdmitted: Bool { !admitted.isEmpty }

    // MARK: Askers

    /// The next name to ask about, or nil when none waits, `maximumAsksInFlight` run, asks are
    /// paused after a failure, or the global ask rate is spent. The parents take turns, one name
    /// each, and the global token is spent here, when the ask is made: a parent flooded with
    /// names cannot take the tokens of the next minute by offering first.
    package mutating func nextAsk(now: Int64) -> (name: String, parent: String)? {
        guard inFlight < Self.maximumAsksInFlight, now >= pausedUntil else { return nil }
        while let parent = pendingParents.first {
            guard var names = pendingByParent[parent], !names.isEmpty else {
                pendingParents.removeFirst()
                continue
            }
            if parentRefuses(parent, now: now) {
                // Its names are refused as their offer would be now: no token spent.
                pendingParents.removeFirst()
                pendingByParent[parent] = nil
                pendingTotal -= names.count
                for name in names { asking.remove(name) }
                counters.cached += names.count
                continue
            }
            guard asks.has(now: now) else { return nil }
            asks.take()
            let name = names.removeFirst()
            pendingTotal -= 1
            pendingParents.removeFirst()
            if names.isEmpty {
                pendingByParent[parent] = nil
            } else {
                pendingByParent[parent] = names
                pendingParents.append(parent)
            }
            inFlight += 1
            return (name, parent)
        }
        return nil
    }

    /// The ask about `name` found that no new name of `parent` can be approved now: its allow
    /// file cannot be used (`detail` says why), or it has neither an allow file nor `acme.ask`.
    /// That parent's new names are refused without an ask for `failureMilliseconds` (a fixed
    /// file is read again within a minute) and the tokens of this ask are given back (nothing
    /// was asked of `acme.ask`); its children stay, as they do while `acme.ask` is down; no
    /// other parent is paused.
    package mutating func refusedParent(_ name: String, parent: String, detail: String, now: Int64) {
        inFlight = max(0, inFlight - 1)
        asking.remove(name)
        counters.asks[.no, default: 0] += 1
        asks.give()
        if var bucket = parentAsks[parent] {
            bucket.give()
            parentAsks[parent] = bucket
        }
        remember(name, .no, until: now + Self.failureMilliseconds)
        refusingParents[parent] = (now + Self.failureMilliseconds, detail)
    }

    /// The answer about `name`; true when the children changed (one added, or one removed by a no).
    package mutating func answered(_ name: String, parent: String, _ answer: Answer, now: Int64) -> Bool {
        inFlight = max(0, inFlight - 1)
        asking.remove(name)
        refusingParents[parent] = nil
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
            // The names waiting are dropped as those offered during the pause are (their clients'
            // next handshakes offer them again): none is asked while the pause lasts, and none
            // is kept through it.
            for (_, names) in pendingByParent {
                for name in names { asking.remove(name) }
                counters.dropped[.paused, default: 0] += names.count
            }
            pendingByParent = [:]
            pendingParents = []
            pendingTotal = 0
            return false
        }
    }

    /// Forgets children no handshake asked for within the grace period; returns their names.
    /// Drops the parents' refusals that have run out too.
    package mutating func expire(now: Int64) -> [String] {
        let gone = children.filter { now - $0.value.lastSeen > Self.graceMilliseconds }.map(\.key)
        for name in gone { _ = forget(name) }
        refusingParents = refusingParents.filter { $0.value.until > now }
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

    private func parentRefuses(_ parent: String, now: Int64) -> Bool {
        guard let refusal = refusingParents[parent] else { return false }
        return refusal.until > now
    }

    private mutating func queue(_ name: String, parent: String, now: Int64) -> Offer {
        guard now >= pausedUntil else { return note(.dropped(.paused)) }
        if parentRefuses(parent, now: now) { return .refused }
        let waiting = pendingByParent[parent]?.count ?? 0
        guard pendingTotal < Self.maximumPendingAsks, waiting < Self.maximumPendingPerParent else { return note(.dropped(.full)) }
        var parentBucket =
            parentAsks[parent] ?? TokenBucket(burst: Self.parentAskBurst, per: Self.parentAsksPerMinute, milliseconds: 60_000, now: now)
        // The parent's token is spent here; the global one when the ask is made (`nextAsk`), the
        // parents taking turns: a quiet parent's name waits behind a few of each flooded
        // parent's, never behind the global rate they spend. A name turned away before may take
        // the last `parentAskReserve` tokens; a new one may not.
        let retried = turnedAway.contains(name)
        guard parentBucket.has(now: now, keeping: retried ? 0 : Self.parentAskReserve) else {
            parentAsks[parent] = parentBucket
            turnedAway.insert(name)
            return note(.dropped(.rate))
        }
        if retried { turnedAway.remove(name) }
        parentBucket.take()
        parentAsks[parent] = parentBucket
        if waiting == 0 { pendingParents.append(parent) }
        pendingByParent[parent, default: []].append(name)
        pendingTotal += 1
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
