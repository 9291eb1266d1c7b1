/// The numbers that bound a wildcard site's children (`ChildLedger`, docs/acme.md, "Wildcard
/// children"): asks in flight and waiting, the ask and new-child rates, how long answers are
/// kept, the caps on answers and children. Apart from the ledger's code, so that each says why
/// in one place.
extension ChildLedger {
    /// Asks running at once, at most: the askers' threads. An `ask` that answers slowly (up to
    /// `ChildAsk.timeoutMilliseconds`) holds one each, so at most this many wait on it.
    package static let maximumAsksInFlight = 4
    /// Names waiting for an asker, at most: a name offered while it is full is dropped (and
    /// offered again at the client's next handshake). The rates below keep it short; this bounds
    /// it whatever they are.
    package static let maximumPendingAsks = 64
    /// Names of one parent waiting for an asker, at most: a few, so that parents flooded with
    /// random names hold a few places each, and the askers, taking the parents in turn, reach a
    /// quiet parent's real name within a few asks whatever the floods' sizes.
    package static let maximumPendingPerParent = 4
    /// Parents refusing every new name (`refusedParent`) listed in `/sites` by name, at most: one
    /// line each, so that the page stays small whatever the number of sites with a broken file.
    package static let maximumRefusingParentsShown = 100
    /// Asks for new names, in all: a burst of `askBurst`, then `asksPerMinute` (one a second).
    /// A platform adds users by the minute, not by the second; a scanner's 100,000 random names
    /// cost one ask a second whatever its rate.
    package static let askBurst = 20
    package static let asksPerMinute = 60
    /// Asks for one parent's new names: a burst of 10, then 20 a minute, so one tenant's
    /// wildcard being scanned leaves the rest of the global rate to the others.
    package static let parentAskBurst = 10
    package static let parentAsksPerMinute = 20
    /// Of a parent's ask tokens, those only a name offered again may take (`TurnedAwayNames`):
    /// a flood of names each sent once leaves them, so a real client retrying its name after
    /// the flood is asked about at its next try instead of at the next refill (up to 3 s); one
    /// retrying during the flood, only if its name outlived the names turned away since
    /// (`TurnedAwayNames.slots` says how likely) and it reached the same replica. The
    /// bucket, and so every bound on asks, is the same: a scanner sending each name twice takes
    /// the reserve as a new name would have, never more.
    package static let parentAskReserve = 2
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
}
