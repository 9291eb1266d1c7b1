import HTTPCore
public import Logging
import Reactor
import Synchronization
public import TLS

/// Obtains and renews certificates for the names the config directory claims (docs/acme.md), on one
/// thread of its own, never on a serving loop. The server asks it, per handshake, for a name's
/// certificate (`certificate(for:)`) and for challenge answers; everything else happens here:
///
/// - Stored certificates load before the first network call (`loadStored`), so a CA outage
///   never stops serving what was issued.
/// - A name is due when it has no certificate, or a third of its certificate's lifetime is left.
///   Due names are ordered in tiers, fairly across sites inside each (`OrderQueue`: renewals
///   first, then names someone asked for (`demand`), then the rest; sites in turn, at most
///   `acme.names-per-site` names per site), within the order budget
///   (`acme.orders-per-hour`, shared by every replica through the storage's order log), one
///   order at a time, each under the name's storage lock so that one replica orders and the
///   others pick the result up from storage (`rescanInterval`).
/// - A failed order backs off per name (`Backoff`: 1 minute doubling to 1 day, the CA's
///   Retry-After when longer); when the CA refused the name, for every replica: the back-off is
///   recorded in storage and read under the name's lock before an order (`ReplicaRecords`), as
///   is demand, so that whichever replica orders next puts a name asked for of any replica in
///   the demanded tier.
/// - A name no longer wanted is dropped: not renewed, not served from storage.
public final class CertificateManager: Sendable {
    public struct Configuration: Sendable {
        public var directory: ACMEURL
        public var contact: [String]
        /// Roots trusted for the directory's HTTPS (`acme.directory-ca`); nil: the system's.
        public var directoryCA: String?
        public var storage: String
        /// Challenge types in order of preference: `tls-alpn-01`, `http-01`, `dns-01`.
        public var challenges: [String]
        public var externalAccountBinding: ACMEClient.ExternalAccountBinding?
        /// `acme.dns-hook`: the program that publishes DNS-01 TXT records.
        public var dnsHook: String?
        /// Orders placed per hour at most, by all replicas sharing the storage.
        public var ordersPerHour: Int
        /// Names ordered per site at most, its aliases included (`acme.names-per-site`); the
        /// rest are `capped`.
        public var namesPerSite: Int
        /// Seconds between looks at the storage for certificates other replicas stored.
        public var rescanInterval: Int64
        /// Over how many seconds the first renewal-window questions about certificates are
        /// spread (tests: 0, at once).
        public var renewalCheckSpread: Int64

        public init(
            directory: ACMEURL, contact: [String] = [], directoryCA: String? = nil, storage: String,
            challenges: [String] = defaultChallenges, externalAccountBinding: ACMEClient.ExternalAccountBinding? = nil,
            dnsHook: String? = nil, ordersPerHour: Int = defaultOrdersPerHour, namesPerSite: Int = defaultNamesPerSite,
            rescanInterval: Int64 = defaultRescanInterval, renewalCheckSpread: Int64 = 3_600
        ) {
            self.renewalCheckSpread = renewalCheckSpread
            self.directory = directory
            self.contact = contact
            self.directoryCA = directoryCA
            self.storage = storage
            self.challenges = challenges
            self.externalAccountBinding = externalAccountBinding
            self.dnsHook = dnsHook
            self.ordersPerHour = ordersPerHour
            self.namesPerSite = namesPerSite
            self.rescanInterval = rescanInterval
        }

        public static let defaultChallenges = ["tls-alpn-01", "http-01"]
        /// Let's Encrypt allows 300 new orders per account per 3 hours (100 an hour); staying
        /// at 60 leaves room for renewals and a second deployment on the same account.
        public static let defaultOrdersPerHour = 60
        /// A site is one app owner's names: its domain, www, a few regional or campaign
        /// domains. 100 (the most names Let's Encrypt puts in one certificate) leaves room for a
        /// large brand, while a tenant's junk aliases cost at most 100 orders.
        public static let defaultNamesPerSite = 100
        /// The setting's bounds: at least one name (the site's own), at most the most names
        /// a config directory is tested with (100,000 sites).
        public static let namesPerSiteBounds: ClosedRange<Int> = 1...100_000
        /// A replica that lost a name's lock serves the winner's certificate this long after it
        /// is stored, at most; a stat per wanted name per look.
        public static let defaultRescanInterval: Int64 = 10
    }

    /// The clocks the manager reads, injected so tests can move time (renewal) without waiting.
    public struct Clock: Sendable {
        /// Seconds since the epoch: certificate validity, the order budget, back-off.
        public var now: @Sendable () -> Int64
        /// Milliseconds from any origin, never going back: lock staleness and heartbeats.
        public var monotonic: @Sendable () -> Int64

        public init(now: @escaping @Sendable () -> Int64, monotonic: @escaping @Sendable () -> Int64) {
            self.now = now
            self.monotonic = monotonic
        }

        public static let system = Clock(now: { WallClock.seconds() }, monotonic: { MonotonicClock().milliseconds() })
    }

    /// A certificate served for a name: what the TLS layer takes, and its validity.
    struct Served: Sendable {
        var source: TLSServer.CertificateSource
        var notBefore: Int64
        var notAfter: Int64
        var version: ACMEStorage.FileVersion
        /// The leaf's DER, for its ARI identifier (RFC 9773 §4.1).
        var leafDER: [UInt8]

        /// A third of the lifetime before the end (Let's Encrypt's and certmagic's rule).
        var renewAt: Int64 { notAfter - (notAfter - notBefore) / 3 }
    }

    /// Per wanted name: what is served, its state, its back-off (its site and queue place are
    /// the `OrderQueue`'s).
    struct Entry: Sendable {
        var served: Served?
        var backoff = Backoff()
        var state: CertificateStatus.State = .queued
        var error: String?
        var errorForTenant: String?
        /// While another replica holds the name's lock: when to try the lock again.
        var lockRetryAt: Int64 = 0
        /// The version of a stored file found unusable (expired, damaged, another name's).
        var rejected: ACMEStorage.FileVersion?
        /// When the CA's renewal window (ARI, RFC 9773) says to renew the served certificate,
        /// and when to ask the CA again; reset when another certificate is served.
        var ariRenewAt: Int64?
        var ariCheckAt: Int64 = 0
        /// When the name was first wanted (seconds since the epoch): its wait in the last tier.
        var wantedAt: Int64 = 0
        /// When someone first asked for it while it had no certificate (`demand`): it is in the
        /// demanded tier from then until it has one.
        var demandedAt: Int64?
        /// Whether that demand was only read from another replica's record (ReplicaRecords.swift):
        /// it ends when the record does, and this replica never writes it again.
        var demandShared = false
        /// When this replica last wrote the name's demand record; nil when it has written none
        /// (the demand is another replica's, or the records' bound was reached).
        var demandRecordedAt: Int64?
        /// When it was last asked for here (`DemandIntake.takeSeen`): its record is written
        /// until `ReplicaRecords.maximumDemandAge` after that.
        var demandSeenAt: Int64?
        /// The last back-off record found dated past the clock-skew tolerance, and its rebase on
        /// this clock (`adoptSharedBackoff`): the same record read again is not logged again.
        var skewRebased: (found: BackoffRecord, rebased: BackoffRecord)?

        /// The tier the name waits in when it is due.
        var tier: OrderQueue.Class { served != nil ? .renewal : demandedAt != nil ? .demanded : .new }

        /// Since when it waits in its tier: its renewal time, its demand, or its first want.
        var waitingSince: Int64 {
            switch tier {
            case .renewal: renewAt ?? wantedAt
            case .demanded: demandedAt ?? wantedAt
            case .new: wantedAt
            }
        }

        /// When the served certificate is due: the third-of-lifetime rule, or earlier when the
        /// CA's renewal window says so.
        var renewAt: Int64? { served.map { min($0.renewAt, ariRenewAt ?? .max) } }

        /// Serves `certificate`: the renewal window asked about is the previous one's.
        mutating func serve(_ certificate: Served) {
            served = certificate
            ariRenewAt = nil
            ariCheckAt = 0
        }
    }

    struct State: Sendable {
        /// Every change bumps `version`, so pages built from the statuses are rebuilt only then.
        var entries: [String: Entry] = [:] { didSet { version &+= 1 } }
        var version: UInt64 = 0
        /// Which due name goes next, and each name's site.
        var queue: OrderQueue
        var counters = CertificateCounters()
        /// The order budget is spent until then (seconds since the epoch).
        var budgetBlockedUntil: Int64 = 0
        /// The share of the budget names nobody asked for may spend is spent until then
        /// (`OrderBudget`): renewals and demanded names may still be ordered.
        var backgroundBlockedUntil: Int64 = 0
        /// Each tier's queued names and the oldest one's `waitingSince`, as of the last pass.
        var tiers: [OrderQueue.Class: TierWait] = [:]
        /// No renewal window is asked for until then (after a temporary error).
        var renewalPausedUntil: Int64 = 0
        var stopped = false
        var thread: LoopThread?
    }

    public let configuration: Configuration
    public let storage: ACMEStorage
    let clock: Clock
    /// Names are logged as they are: each is checked (the config's, `HostName.isPlain`,
    /// `StorageName.component`). A CA's problem text, libcurl's account of a failure and a
    /// child's answer are escaped where they enter (`ACMEProblem.clean`,
    /// `ACMEError.transport(from:)`, `ChildAsk.detail(of:)`), as is the character a JSON
    /// parse error quotes (StrictJSON's `describeCurrent`); every way out escapes again: the
    /// text log and the JSON log (Daemon/LiveLogging.swift), the /sites page (`HTMLText`) and
    /// `aasad sites` (`TerminalText`).
    let logger: Logger
    let state: Mutex<State>
    /// The names the config directory claims, as the last `want` gave them: read by handshakes.
    let wanted = Mutex<Set<String>>([])
    let wakeup: Wakeup
    let locks: StorageLock
    /// Failed orders' back-off and names asked for, shared with the other replicas.
    let records: ReplicaRecords
    /// What handshakes read: each name's served certificate, apart from `state` (which the
    /// manager's thread holds for passes over every name), changed only when a certificate is.
    let servedCertificates = Mutex<[String: TLSServer.CertificateSource]>([:])
    /// Names asked for by handshakes, Apple's CDN and the tenant API, on their way to the
    /// manager's thread (`demand`).
    let intake = Mutex(DemandIntake())
    /// The order budget in force (`acme.orders-per-hour`): the configuration's at the start,
    /// changed on the running manager by `setOrdersPerHour` (CertificateManager+Budget.swift).
    let budget: Atomic<Int>
    /// Tests only: runs in `spendBudget`'s critical section (the state's lock held) after the
    /// budget is read and before it is judged, where a live change of the budget must not land.
    let beforeBudgetDecision = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests only: the storage error `shareFailure` meets instead of writing a back-off record.
    let failureWriteFault = Mutex<(@Sendable (String) -> ACMEError?)?>(nil)
    /// Pending challenge answers, in memory for the serving loops.
    public let challenges: ChallengeBook
    /// The ACME client, made on the manager's thread when first needed, and whether its account
    /// has been found or created (renewal windows need no account; orders do).
    let client = Mutex<(client: ACMEClient?, hasAccount: Bool)>((nil, false))

    public init(configuration: Configuration, clock: Clock = .system, logger: Logger) throws(ACMEError) {
        self.configuration = configuration
        storage = try ACMEStorage(root: configuration.storage)
        self.clock = clock
        self.logger = logger
        state = Mutex(State(queue: OrderQueue(namesPerSite: configuration.namesPerSite)))
        budget = Atomic(configuration.ordersPerHour)
        locks = try StorageLock(directory: storage.locks, clock: clock.monotonic, logger: logger)
        records = ReplicaRecords(storage: storage)
        challenges = try ChallengeBook(storage: storage, logger: logger)
        do {
            wakeup = try Wakeup()
        } catch {
            throw .storage("cannot make the manager's wake-up pipe: \(error.reason)")
        }
        // The record, then a look at the challenges, before anything is served; last, so that
        // an init that throws leaves no record. A manager made and never started is stopped
        // (`stop`), which removes it: the other replicas would wait for it the whole pause.
        challenges.announce()
    }

    // MARK: - What the server asks

    /// The certificate for an SNI name: the name's own, else its wildcard parent's (`*.suffix`).
    public func certificate(for name: String) -> TLSServer.CertificateSource? {
        servedCertificates.withLock { served in
            if let source = served[name] { return source }
            guard let dot = name.firstIndex(of: ".") else { return nil }
            return served["*" + name[dot...]]
        }
    }

    /// Notes that someone asked for `name`: a handshake's SNI (when no certificate of the
    /// manager's is served for it), Apple's CDN fetching its site's file, the tenant API creating
    /// it. A wanted name without a certificate then goes ahead of every name nobody asked for,
    /// within the budget; anything else (a name not wanted: random SNI, a name the ownership
    /// check holds back) is ignored after one look-up. Called on serving threads: two short
    /// locks and, for a name not yet asked for, a write to the manager's wake-up pipe; the
    /// caller's handshake gets the current certificate and never waits for the order.
    public func demand(_ name: String) {
        guard wanted.withLock({ $0.contains(name) }) else { return }
        // A name served a certificate of the manager's needs no order (its renewal has a tier of
        // its own): without this, each Apple fetch of a certified site (about four a day each, 46
        // a second at 1,000,000 sites) or a client sending its User-Agent woke the manager for a
        // pass over every name.
        guard servedCertificates.withLock({ $0[name] == nil }) else { return }
        // Woken once per batch: names offered while some wait are taken by the same pass.
        if intake.withLock({ $0.offer(name) && $0.pendingCount == 1 }) { wakeup.wake() }
    }

    /// The names in the demanded tier (or on their way to it): what a manager replaced by a
    /// settings change hands to the new one.
    public func demandedNames() -> [String] {
        let pending = intake.withLock { $0.pending }
        let held = state.withLock { state in
            state.entries.compactMap { $0.value.demandedAt != nil && !$0.value.demandShared && $0.value.served == nil ? $0.key : nil }
        }
        return held + pending
    }

    /// Each tier's queued names and how long the oldest has waited (seconds), as of the
    /// manager's last pass: what `/sites` and metrics show.
    package func tierWaits() -> [(tier: OrderQueue.Class, queued: Int, oldestAge: Int64)] {
        let now = clock.now()
        let tiers = state.withLock { $0.tiers }
        return OrderQueue.Class.allCases.map { tier in
            let wait = tiers[tier] ?? TierWait()
            return (tier, wait.queued, wait.oldestSince.map { max(0, now - $0) } ?? 0)
        }
    }

    /// The TLS-ALPN-01 certificate for a name being validated (RFC 8737), presented by this
    /// process or another replica; only for wanted names. Memory only (`ChallengeBook`).
    public func tlsALPNChallenge(for name: String) -> TLSServer.CertificateSource? {
        guard wanted.withLock({ $0.contains(name) }) else { return nil }
        return challenges.tlsALPN(for: name)
    }

    /// The HTTP-01 key authorization for a token (RFC 8555 §8.3), for a wanted host only.
    /// Memory only (`ChallengeBook`).
    public func http01Answer(host: String, token: String) -> [UInt8]? {
        guard wanted.withLock({ $0.contains(host) }) else { return nil }
        return challenges.http01(token: token)
    }

    // MARK: - What the config directory says

    /// The names to hold certificates for, by site (a site's directory name, each in the
    /// site's order, its own name first): exact host names, and wildcards (`*.suffix`), which
    /// only DNS-01 can prove. Names not given are forgotten. The site decides the name's turn and
    /// its cap (`OrderQueue`).
    public func want(_ sites: [String: [String]]) {
        let now = clock.now()
        state.withLock { state in
            let gone = state.queue.want(sites)
            for name in gone { state.entries[name] = nil }
            if !gone.isEmpty {
                servedCertificates.withLock { served in for name in gone { served[name] = nil } }
                intake.withLock { intake in for name in gone { intake.release(name) } }
            }
            for name in state.queue.names where state.entries[name] == nil { state.entries[name] = Entry(wantedAt: now) }
            // Built before the lock that handshakes' challenge look-ups take.
            var names = Set(state.queue.names)
            // The old set (up to every wanted name) is freed after the swap, outside the lock
            // that handshakes' demand and challenge look-ups take.
            wanted.withLock { swap(&$0, &names) }
        }
        wakeup.wake()
    }

    /// Loads what storage holds for every wanted name, before anything talks to the CA.
    public func loadStored() {
        let names = wanted.withLock { Array($0) }
        for name in names { refresh(name) }
    }

    public func start() {
        challenges.start()
        let thread = LoopThread.spawn { [self] in run() }
        state.withLock { $0.thread = thread }
    }

    /// Stops the thread after the step it is in (an order under way finishes or fails first),
    /// and removes this replica's record (`ReplicaPresence`). Also for a manager made and never
    /// started (a start or a settings change that failed after it was made).
    public func stop() {
        let thread = state.withLock { state -> LoopThread? in
            state.stopped = true
            return state.thread
        }
        wakeup.wake()
        thread?.join()
        challenges.stop()
    }
}
