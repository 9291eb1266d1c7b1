import Glibc
import Logging
import Reactor
import TLS

/// The manager's thread: looks at storage, picks the next due name, orders it.
extension CertificateManager {
    /// How long the thread sleeps between looks when nothing wakes it.
    static let idleMilliseconds: Int64 = 1000

    func run() {
        var nextRescan: Int64 = 0
        while !state.withLock({ $0.stopped }) {
            let now = clock.now()
            if now >= nextRescan {
                for name in wanted.withLock({ Array($0) }) { refresh(name) }
                shareDemand(now: now)
                nextRescan = now + configuration.rescanInterval
            }
            takeDemand(now: now)
            if let (name, tier) = nextDue(now: now) {
                order(name, tier: tier)
                continue
            }
            checkRenewalWindows(now: now)
            wakeup.wait(milliseconds: Self.idleMilliseconds)
        }
    }

    /// Moves the names asked for since the last pass into the demanded tier: those still wanted
    /// and without a certificate (one may have been stored by another replica meanwhile), and
    /// records each for the other replicas (`recordDemand`).
    func takeDemand(now: Int64) {
        let (names, seen) = intake.withLock { ($0.take(), $0.takeSeen()) }
        // Names asked for again while demanded: their record is kept written. Noted once per
        // refresh interval at most, since every write of an entry rebuilds the status pages.
        if !seen.isEmpty {
            state.withLock { state in
                for name in seen {
                    guard let entry = state.entries[name], entry.demandSeenAt.map({ now - $0 >= ReplicaRecords.demandLifetime / 2 }) ?? true
                    else { continue }
                    state.entries[name]?.demandSeenAt = now
                }
            }
        }
        guard !names.isEmpty else { return }
        var demanded: [String] = []
        var done: [String] = []
        state.withLock { state in
            for name in names {
                guard var entry = state.entries[name], entry.served == nil else {
                    done.append(name)
                    continue
                }
                // Demand read from another replica's record becomes this replica's own: it is
                // recorded and kept fresh from here too.
                guard entry.demandedAt == nil || entry.demandShared else { continue }
                entry.demandedAt = min(entry.demandedAt ?? now, now)
                entry.demandShared = false
                entry.demandSeenAt = now
                state.entries[name] = entry
                demanded.append(name)
            }
        }
        if !done.isEmpty { intake.withLock { intake in for name in done { intake.release(name) } } }
        recordDemand(demanded, now: now)
        for name in demanded {
            logger.info(
                "a name without a certificate was asked for; it is ordered ahead of names nobody asked for", metadata: ["name": "\(name)"])
        }
    }

    /// Notes that `name` is served a certificate now: it leaves the demanded tier. True when it
    /// was in it: the caller removes its demand record (outside the state's lock).
    func servedNow(_ name: String, _ entry: inout Entry) -> Bool {
        guard entry.demandedAt != nil else { return false }
        entry.demandedAt = nil
        entry.demandShared = false
        entry.demandRecordedAt = nil
        intake.withLock { $0.release(name) }
        return true
    }

    /// Re-reads `name`'s stored certificate when its file changed; keeps what is served when the
    /// new file is unusable (a replica mid-write never happens: files are renamed into place).
    func refresh(_ name: String) {
        let version: ACMEStorage.FileVersion?
        do {
            version = try storage.certificateVersion(for: name)
        } catch {
            logger.error("cannot look at a stored certificate", metadata: ["name": "\(name)", "error": "\(error)"])
            return
        }
        let (known, rejected) = state.withLock { ($0.entries[name]?.served?.version, $0.entries[name]?.rejected) }
        // An unusable file is judged (and logged) once per version, not at every look.
        guard let version, version != known, version != rejected else { return }
        guard let loaded = loadCertificate(name) else {
            setState(name) { $0.rejected = version }
            return
        }
        let (kept, wasDemanded) = state.withLock { state -> (Bool, Bool) in
            guard var entry = state.entries[name] else { return (false, false) }
            entry.serve(loaded)
            let wasDemanded = servedNow(name, &entry)
            servedCertificates.withLock { $0[name] = loaded.source }
            if let renewAt = entry.renewAt, clock.now() < renewAt { entry.state = .valid }
            entry.error = nil
            entry.errorForTenant = nil
            entry.backoff.succeeded()
            state.entries[name] = entry
            state.counters.pickedUp += 1
            return (true, wasDemanded)
        }
        if wasDemanded { records.removeDemand(name) }
        if kept {
            logger.info(
                "certificate loaded from storage",
                metadata: ["name": "\(name)", "notAfter": "\(loaded.notAfter)", "source": "acme"])
        }
    }

    /// The stored file for `name` as a served certificate: split, checked by building a TLS
    /// context (the key must match the leaf), the leaf must cover the name and be unexpired.
    func loadCertificate(_ name: String) -> Served? {
        do {
            guard let file = try storage.certificate(for: name) else { return nil }
            guard let pair = ACMEStorage.split(file.bytes) else {
                throw ACMEError.storage("\(try storage.certificatePath(for: name)) does not hold a chain and one key")
            }
            let info: CertificateInfo
            do {
                info = try CertificateInfo(leafPEM: pair.chainPEM)
                _ = try TLSContext(chainPEM: pair.chainPEM, keyPEM: pair.keyPEM, identity: "check", source: name)
            } catch {
                throw ACMEError.storage("the stored certificate for \(name) is unusable: \(error)")
            }
            guard info.covers(name) else { throw ACMEError.storage("the stored certificate for \(name) does not cover it") }
            guard info.notAfter > clock.now() else { throw ACMEError.storage("the stored certificate for \(name) has expired") }
            let source = TLSServer.CertificateSource(
                identity: ACMEStorage.identity(chainPEM: pair.chainPEM, keyPEM: pair.keyPEM), chainPEM: pair.chainPEM, keyPEM: pair.keyPEM,
                label: "acme:\(name)")
            let leaf = try CertificateChain(pem: pair.chainPEM).certificates[0]
            return Served(source: source, notBefore: info.notBefore, notAfter: info.notAfter, version: file.version, leafDER: leaf)
        } catch {
            logger.warning("a stored certificate is not used", metadata: ["name": "\(name)", "error": "\(error)"])
            return nil
        }
    }

    /// The name to order now and its tier (`OrderQueue`: renewals, then names asked for, then
    /// the rest; sites in turn), or nil. Also brings every entry's state up to date (queued,
    /// capped, needs a hook, valid) and counts each tier's queued names.
    func nextDue(now: Int64) -> (String, OrderQueue.Class)? {
        let hasHook = configuration.dnsHook != nil
        return state.withLock { state -> (String, OrderQueue.Class)? in
            let budgetOpen = now >= state.budgetBlockedUntil
            let backgroundOpen = budgetOpen && now >= state.backgroundBlockedUntil
            let capped = state.queue.capped { state.entries[$0]?.served != nil }
            var due: [(String, OrderQueue.Class, Int64)] = []
            var tiers: [OrderQueue.Class: TierWait] = [:]
            for (name, entry) in state.entries {
                let next: CertificateStatus.State
                if let renewAt = entry.renewAt, now < renewAt {
                    next = .valid
                } else if capped.contains(name) {
                    // Never ordered; a certificate it still has is served until it expires.
                    next = .capped
                } else if name.hasPrefix("*.") && !hasHook {
                    next = .needsDNSHook
                } else if !entry.backoff.mayAttempt(now: now) {
                    next = .failed
                } else if now < entry.lockRetryAt {
                    next = .waiting
                } else {
                    next = .queued
                    let tier = entry.tier
                    let since = entry.waitingSince
                    tiers[tier, default: TierWait()].queued += 1
                    if tiers[tier]?.oldestSince.map({ since < $0 }) ?? true { tiers[tier]?.oldestSince = since }
                    if tier == .new ? backgroundOpen : budgetOpen { due.append((name, tier, entry.demandedAt ?? 0)) }
                }
                // Written only when it changed: every write moves the version pages are built on.
                if next != entry.state { state.entries[name]?.state = next }
            }
            state.tiers = tiers
            guard let name = state.queue.next(asked: due) else { return nil }
            return (name, state.entries[name]?.tier ?? .new)
        }
    }

    func setState(_ name: String, _ change: (inout Entry) -> Void) {
        state.withLock { state in
            guard var entry = state.entries[name] else { return }
            change(&entry)
            state.entries[name] = entry
        }
    }

    /// Renewal windows (ARI, RFC 9773) asked of the CA per pass at most (a pass a second at most):
    /// at 100,000 names a full round takes about 5.5 hours, about the CA's usual Retry-After, and
    /// the thread is never away from due orders for more than a few requests.
    static let maximumRenewalChecksPerPass = 5
    /// §4.3: ask again when the CA's Retry-After says, kept between a minute and a day; six hours
    /// without one (the RFC's example) and after a long-term error (4xx, a malformed answer); a
    /// day when the CA offers no ARI or the certificate has no Authority Key Identifier.
    static let renewalCheckDefault: Int64 = 21_600
    static let renewalCheckBounds: ClosedRange<Int64> = 60...86_400
    /// After a transport error, a 429 or a 5xx: no name is asked about for this long (or the
    /// CA's Retry-After when longer), so an outage is not met with a request a second.
    static let renewalPauseAfterTemporaryError: Int64 = 300

    /// Asks the CA for the renewal window of served certificates whose time to ask has come;
    /// a window that starts before the third-of-lifetime rule moves the renewal earlier (a CA
    /// revoking a batch opens its window at once: the renewal happens at once).
    func checkRenewalWindows(now: Int64) {
        let spread = configuration.renewalCheckSpread
        let due = state.withLock { state -> [(String, ACMEStorage.FileVersion, [UInt8], Int64)] in
            guard now >= state.renewalPausedUntil else { return [] }
            var due: [(String, ACMEStorage.FileVersion, [UInt8], Int64)] = []
            for (name, entry) in state.entries {
                guard let served = entry.served, served.notAfter > now, now >= entry.ariCheckAt else { continue }
                if entry.ariCheckAt == 0 && spread > 0 {
                    // A certificate never asked about: its first time is spread over `spread`
                    // seconds, so a start with many stored certificates is no burst.
                    state.entries[name]?.ariCheckAt = now + Int64.random(in: 0..<spread)
                    continue
                }
                due.append((name, served.version, served.leafDER, served.notBefore))
                if due.count == Self.maximumRenewalChecksPerPass { break }
            }
            return due
        }
        for (name, version, leaf, notBefore) in due {
            if state.withLock({ $0.stopped }) { return }
            var renewAt: Int64?
            var next = now + Self.renewalCheckDefault
            var pause: Int64?
            do {
                if let answer = try directoryClient().renewalInfo(leafDER: leaf, now: now) {
                    // A window that ends before this certificate began is about its predecessor
                    // (a cached answer): following it would order again and again.
                    if answer.window.end > notBefore {
                        renewAt = max(now, answer.window.renewalTime(random: Double.random(in: 0..<1)))
                    }
                    next = now + (answer.retryAfter ?? Self.renewalCheckDefault).clamped(to: Self.renewalCheckBounds)
                    if let renewAt, renewAt < (state.withLock { $0.entries[name]?.served?.renewAt } ?? .max) {
                        logger.notice(
                            "the CA's renewal window moves a renewal earlier",
                            metadata: [
                                "name": "\(name)", "renewAt": "\(renewAt)", "explanation": "\(answer.window.explanationURL ?? "-")",
                            ])
                    }
                } else {
                    next = now + Self.renewalCheckBounds.upperBound
                }
            } catch {
                logger.warning("cannot read the CA's renewal window", metadata: ["name": "\(name)", "error": "\(error)"])
                let retry = error.retryAfter
                if error.isTemporary {
                    pause = now + max(retry ?? 0, Self.renewalPauseAfterTemporaryError)
                } else {
                    next = now + max(retry ?? 0, Self.renewalCheckDefault).clamped(to: Self.renewalCheckBounds)
                }
            }
            setState(name) { entry in
                // The answer is for the certificate asked about, not one served since; an error
                // or no answer keeps a window already learned.
                guard entry.served?.version == version else { return }
                if let renewAt { entry.ariRenewAt = renewAt }
                entry.ariCheckAt = pause ?? next
            }
            if let pause {
                state.withLock { $0.renewalPausedUntil = pause }
                return
            }
        }
    }
}

extension ACMEError {
    /// A failure worth trying again soon: no answer, a rate limit, or the CA's own trouble.
    var isTemporary: Bool {
        switch self {
        case .transport, .timedOut: true
        case .problem(_, let status): status == 429 || status >= 500
        default: false
        }
    }
}

extension Int64 {
    fileprivate func clamped(to range: ClosedRange<Int64>) -> Int64 { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
