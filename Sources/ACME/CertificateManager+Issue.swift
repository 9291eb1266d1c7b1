import Glibc
import HTTPCore
import Logging
import Reactor
import Synchronization

/// One order: the name's lock (with its heartbeat), the shared order budget, the CA, storage.
extension CertificateManager {
    /// How long to wait before trying a name's lock again while another replica holds it.
    static let lockRetrySeconds: Int64 = 5
    /// How long to wait when the order budget's own lock is busy (it is held for a file write).
    static let budgetLockRetrySeconds: Int64 = 2
    /// Largest order log read: one line of about 80 bytes per order of the last hour.
    static let maximumOrderLogBytes = 4 << 20
    /// The budget's window.
    static let budgetWindowSeconds: Int64 = 3600

    func order(_ name: String, tier: OrderQueue.Class) {
        let now = clock.now()
        do {
            guard try locks.tryLock(name) else {
                setState(name) {
                    $0.state = .waiting
                    $0.lockRetryAt = now + Self.lockRetrySeconds
                }
                return
            }
        } catch {
            failed(name, error)
            return
        }
        let heartbeat: Heartbeat
        do {
            heartbeat = try Heartbeat(locks: locks, name: name, logger: logger)
        } catch {
            try? locks.unlock(name)
            failed(name, error)
            return
        }
        defer {
            heartbeat.stop()
            try? locks.unlock(name)
        }
        // Another replica may have stored it while this one waited for the lock.
        refresh(name)
        if let renewAt = state.withLock({ $0.entries[name]?.renewAt }), now < renewAt { return }
        // Another replica's order for it failed, and its back-off has not ended.
        if adoptSharedBackoff(name, now: now) { return }
        // The account first: a CA that cannot be reached costs no order from the budget. Its
        // failures are this replica's (its network, its settings), never shared.
        let client: ACMEClient
        do {
            client = try acmeClient()
        } catch {
            failed(name, error)
            return
        }
        do {
            guard try spendBudget(name: name, tier: tier, now: now) else { return }
            // The order is placed: the name's site goes behind every other site.
            state.withLock { $0.queue.ordered(name) }
            setState(name) { $0.state = .ordering }
            let renewing = state.withLock { $0.entries[name]?.served != nil }
            logger.info("ordering a certificate", metadata: ["name": "\(name)", "renewal": "\(renewing)", "tier": "\(tier.label)"])
            let issued = try client.issue(
                names: [name],
                solver: StorageSolver(storage: storage, configuration: configuration, book: challenges, pause: { [self] in pause($0) }),
                sleep: { [self] in pause($0) })
            // A lost lock (a heartbeat that could not be written, or a takeover after a long
            // stall) does not waste what the CA issued: the store is one rename, and at worst
            // replaces another replica's equally fresh certificate.
            if !heartbeat.held {
                logger.warning("the lock was lost during the order; storing the certificate anyway", metadata: ["name": "\(name)"])
            }
            try storage.storeCertificate(name: name, chainPEM: issued.chainPEM, keyPEM: issued.keyPEM)
            guard let served = loadCertificate(name) else {
                throw ACMEError.storage("the certificate stored for \(name) cannot be loaded back")
            }
            // A certificate already due for renewal (a CA issuing shorter lifetimes than its
            // clients expect, or this machine's clock far ahead) is served, but not ordered again
            // at once: that would spend the whole order budget on one name. The back-off is
            // shared below: replicas whose clocks agree with this one find the certificate due
            // too; those whose clocks are right while this one runs ahead by more than
            // `ReplicaRecords.clockSkewTolerance` ignore the record, and find it not due anyway.
            let dueAlready = clock.now() >= served.renewAt
            var next: Int64 = 0
            var failures = 0
            let wasDemanded = state.withLock { state -> Bool in
                state.counters.issued += 1
                guard var entry = state.entries[name] else { return false }
                entry.serve(served)
                let wasDemanded = servedNow(name, &entry)
                servedCertificates.withLock { $0[name] = served.source }
                entry.state = .valid
                entry.error = nil
                entry.errorForTenant = nil
                entry.backoff.succeeded()
                if dueAlready {
                    next = entry.backoff.failed(now: clock.now(), random: Double.random(in: 0..<1))
                    entry.state = .failed
                    entry.error =
                        "the issued certificate is already due for renewal (notBefore \(served.notBefore), notAfter \(served.notAfter)): check this machine's clock"
                    entry.errorForTenant = ACMEError.serverSideSummary
                }
                failures = entry.backoff.failures
                state.entries[name] = entry
                return wasDemanded
            }
            if wasDemanded { records.removeDemand(name) }
            // The other replicas load the same certificate and would find it due as well (on a
            // clock like this one's): they wait as this one does.
            if dueAlready {
                shareFailure(name, ReplicaRecords.Failure(failedAt: clock.now(), failures: failures, nextAttempt: next))
            } else {
                records.removeFailure(name)
            }
            if dueAlready {
                logger.error(
                    "an issued certificate is already due for renewal; check the clock",
                    metadata: ["name": "\(name)", "notAfter": "\(served.notAfter)", "nextAttempt": "\(next)"])
            }
            logger.notice(
                "certificate issued",
                metadata: ["name": "\(name)", "notAfter": "\(served.notAfter)", "renewAt": "\(served.renewAt)", "source": "acme"])
        } catch {
            failed(name, error, lockHeld: true)
        }
    }

    /// The polling sleep of an order: cut short when the manager stops, so that a stop waits at
    /// most for the request under way (libcurl's time limits), not for a CA's Retry-After.
    func pause(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let total = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        var slept: Int64 = 0
        while slept < total && !state.withLock({ $0.stopped }) {
            let step = min(Self.pauseStepMilliseconds, total - slept)
            var request = timespec(tv_sec: Int(step / 1000), tv_nsec: Int(step % 1000) * 1_000_000)
            _ = nanosleep(&request, nil)
            slept += step
        }
    }

    /// How often a polling sleep looks at the stop flag.
    static let pauseStepMilliseconds: Int64 = 100

    /// Backs the name off and says why, with the next attempt. `lockHeld`: the failure came
    /// while this replica held the name's lock (the order); when it is the CA's verdict on the
    /// name (`ACMEError.isVerdictOnName`), every replica waits for its back-off (`shareFailure`).
    /// Any other failure (no answer from the CA, this replica's storage, key or DNS hook, a
    /// failure to take the lock) is this replica's, and backs the name off here only.
    func failed(_ name: String, _ error: any Error, lockHeld: Bool = false) {
        let now = clock.now()
        var next: Int64 = 0
        var failures = 0
        state.withLock { state in
            state.counters.failed += 1
            guard var entry = state.entries[name] else { return }
            next = entry.backoff.failed(now: now, retryAfter: (error as? ACMEError)?.retryAfter, random: Double.random(in: 0..<1))
            failures = entry.backoff.failures
            entry.state = .failed
            entry.error = "\(error)"
            entry.errorForTenant = (error as? ACMEError)?.tenantSummary ?? ACMEError.serverSideSummary
            state.entries[name] = entry
        }
        logger.error(
            "certificate order failed", metadata: ["name": "\(name)", "error": "\(error)", "nextAttempt": "\(next)", "source": "acme"])
        let verdict = (error as? ACMEError)?.isVerdictOnName ?? false
        if lockHeld && verdict && failures > 0 {
            shareFailure(name, ReplicaRecords.Failure(failedAt: now, failures: failures, nextAttempt: next))
        }
    }

    /// The client, made at the first order: the account key from storage (made once for all
    /// replicas), the account found or created.
    func acmeClient() throws(ACMEError) -> ACMEClient {
        let made = try directoryClient()
        if client.withLock({ $0.hasAccount }) { return made }
        let (url, _) = try made.account(
            contact: configuration.contact.map { "mailto:" + $0 }, externalAccountBinding: configuration.externalAccountBinding)
        logger.info("ACME account ready", metadata: ["account": "\(url)", "directory": "\(configuration.directory)"])
        client.withLock { $0.hasAccount = true }
        return made
    }

    /// The client without the account step: what reading renewal windows needs.
    func directoryClient() throws(ACMEError) -> ACMEClient {
        if let made = client.withLock({ $0.client }) { return made }
        let key = try storage.accountKey(for: configuration.directory)
        let http = try HTTPSClient(configuration: HTTPSClient.Configuration(caFile: configuration.directoryCA))
        let made = ACMEClient(directoryURL: configuration.directory, key: key, http: http)
        client.withLock { $0.client = made }
        return made
    }

    /// Takes one order from the budget shared through `<storage>/orders.log` (under its own
    /// lock, so replicas count each other's orders); false when the hour's budget is spent for
    /// `tier` (names nobody asked for may not spend the part kept for the others:
    /// `OrderBudget`) or the budget's lock is busy, and the manager then waits.
    func spendBudget(name: String, tier: OrderQueue.Class, now: Int64) throws(ACMEError) -> Bool {
        let budgetLock = "_orders"
        guard try locks.tryLock(budgetLock) else {
            state.withLock { $0.budgetBlockedUntil = now + Self.budgetLockRetrySeconds }
            return false
        }
        defer { try? locks.unlock(budgetLock) }
        let log = try storage.read(storage.orderLog, limit: Self.maximumOrderLogBytes) ?? []
        var recent: [(time: Int64, line: ArraySlice<UInt8>)] = []
        for line in log.split(separator: 0x0A) {
            guard let space = line.firstIndex(of: 0x20), let time = Int64(String(decoding: line[..<space], as: UTF8.self)) else {
                continue
            }
            // Entries ahead of this clock (another replica's clock runs fast) count too.
            if time > now - Self.budgetWindowSeconds { recent.append((time, line)) }
        }
        // The budget is read and the blocked-until time written in one critical section, the
        // one `setOrdersPerHour` changes the budget and clears those times in: a budget raised
        // while this spend was reading the log either is seen here or clears what is written
        // here, never lost until the hour's window reopens.
        let spent = state.withLock { state -> (perHour: Int, limit: Int, reopens: Int64)? in
            let perHour = ordersPerHour
            beforeBudgetDecision.withLock { $0 }?()
            let limit = OrderBudget.limit(for: tier, ordersPerHour: perHour)
            guard recent.count >= limit else { return nil }
            let reopens = OrderBudget.reopens(times: recent.map(\.time), limit: limit, window: Self.budgetWindowSeconds)
            // The whole budget spent holds every tier; the background's share only the last.
            if tier == .new {
                state.backgroundBlockedUntil = reopens
            } else {
                state.budgetBlockedUntil = reopens
            }
            return (perHour, limit, reopens)
        }
        if let spent {
            logger.notice(
                tier == .new
                    ? "the order budget's share for names nobody asked for is spent; they wait" : "order budget spent; due names wait",
                metadata: [
                    "ordersPerHour": "\(spent.perHour)", "limit": "\(spent.limit)", "tier": "\(tier.label)",
                    "reopensAt": "\(spent.reopens)",
                ])
            return false
        }
        var kept: [UInt8] = []
        for entry in recent { kept += entry.line + [0x0A] }
        kept += Array("\(now) \(name)\n".utf8)
        try AtomicFile.write(kept, to: storage.orderLog, mode: 0o644)
        return true
    }
}

/// Refreshes a held lock every `StorageLock.heartbeatInterval` on a thread of its own while an
/// order (which blocks on the network) runs; notes when the lock is lost. A beat that fails is
/// logged and the lock kept (`StorageLock.refresh`): the next beat tries again, so a holder whose
/// storage failed for a moment keeps its lock, its flock and its heartbeats, and no other replica
/// orders the name meanwhile. Only another file at the lock's name ends the beats.
final class Heartbeat: Sendable {
    private let wakeup: Wakeup
    private let stopped = Mutex(false)
    private let lost = Mutex(false)
    private let thread: Mutex<LoopThread?> = Mutex(nil)

    init(
        locks: StorageLock, name: String, interval: Int64 = StorageLock.heartbeatInterval, logger: Logger? = nil
    ) throws(ACMEError) {
        do {
            wakeup = try Wakeup()
        } catch {
            throw .storage("cannot start the lock's heartbeat: \(error.reason)")
        }
        let thread = LoopThread.spawn { [self] in
            while !stopped.withLock({ $0 }) {
                wakeup.wait(milliseconds: interval)
                if stopped.withLock({ $0 }) { return }
                do {
                    guard try locks.refresh(name) else {
                        lost.withLock { $0 = true }
                        return
                    }
                } catch {
                    logger?.warning("a lock heartbeat failed; the lock is kept", metadata: ["name": "\(name)", "error": "\(error)"])
                }
            }
        }
        self.thread.withLock { $0 = thread }
    }

    /// Whether the lock is still this process's.
    var held: Bool { !lost.withLock { $0 } }

    func stop() {
        stopped.withLock { $0 = true }
        wakeup.wake()
        thread.withLock { $0 }?.join()
    }
}

/// Presents challenges through the storage directory, so that whichever replica the CA reaches
/// answers: HTTP-01 key authorizations and TLS-ALPN-01 certificates as files; DNS-01 through the
/// operator's hook (`add|remove NAME VALUE`, NAME the record's name `_acme-challenge.<domain>`;
/// a wildcard's authorization, and so its record, is its base domain's: RFC 8555 §7.1.4).
final class StorageSolver: ChallengeSolver {
    let storage: ACMEStorage
    let configuration: CertificateManager.Configuration
    let book: ChallengeBook
    let pause: @Sendable (Duration) -> Void
    /// DNS-01 values presented, by name: `remove` gets the value it removes, as lego's exec hook.
    private let presented = Mutex<[String: String]>([:])

    init(
        storage: ACMEStorage, configuration: CertificateManager.Configuration, book: ChallengeBook,
        pause: @escaping @Sendable (Duration) -> Void
    ) {
        self.storage = storage
        self.configuration = configuration
        self.book = book
        self.pause = pause
    }

    var types: [String] {
        var types = configuration.challenges
        if configuration.dnsHook != nil && !types.contains("dns-01") { types.append("dns-01") }
        if configuration.dnsHook == nil { types.removeAll { $0 == "dns-01" } }
        return types
    }

    func present(type: String, name: String, token: String, keyAuthorization: String) throws(ACMEError) {
        switch type {
        case "http-01":
            try storage.storeHTTP01(token: token, keyAuthorization: keyAuthorization)
            book.addHTTP01(token: token, answer: Array(keyAuthorization.utf8))
            // Every replica's book has it before the CA is told to come.
            book.awaitOthers(pause: pause)
        case "tls-alpn-01":
            let pair = try tlsALPN01Certificate(name: name, keyAuthorization: keyAuthorization)
            try storage.storeTLSALPNChallenge(name: name, chainPEM: pair.chainPEM, keyPEM: pair.keyPEM)
            book.addTLSALPN(name: name, chainPEM: pair.chainPEM, keyPEM: pair.keyPEM)
            book.awaitOthers(pause: pause)
        case "dns-01":
            let value = dns01TXTValue(keyAuthorization: keyAuthorization)
            presented.withLock { $0[name] = value }
            try hook("add", name: name, value: value)
        default:
            throw .malformed(what: "challenge", reason: "aasad does not answer \(type)")
        }
    }

    func cleanUp(type: String, name: String, token: String) {
        switch type {
        case "http-01":
            storage.removeHTTP01(token: token)
            book.removeHTTP01(token: token)
        case "tls-alpn-01":
            storage.removeTLSALPNChallenge(name: name)
            book.removeTLSALPN(name: name)
        case "dns-01":
            guard let value = presented.withLock({ $0.removeValue(forKey: name) }) else { return }
            try? hook("remove", name: name, value: value)
        default: break
        }
    }

    private func hook(_ action: String, name: String, value: String) throws(ACMEError) {
        guard let program = configuration.dnsHook else { throw .malformed(what: "challenge", reason: "dns-01 needs acme.dns-hook") }
        let result = try HookProgram.run(program, [action, dns01RecordName(name), value])
        guard result.status == 0 else {
            let how =
                result.timedOut
                ? "ran past \(HookProgram.timeoutMilliseconds / 1000) s" : "failed (\(result.status.map { "exit \($0)" } ?? "killed"))"
            throw .storage("the dns hook \(program) \(action) \(dns01RecordName(name)) \(how): \(result.output)")
        }
    }
}
