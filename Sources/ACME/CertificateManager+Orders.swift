import Glibc
import HTTPCore
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
                nextRescan = now + configuration.rescanInterval
            }
            if let name = nextDue(now: now) {
                order(name)
                continue
            }
            checkRenewalWindows(now: now)
            wakeup.wait(milliseconds: Self.idleMilliseconds)
        }
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
        let kept = state.withLock { state -> Bool in
            guard var entry = state.entries[name] else { return false }
            entry.serve(loaded)
            servedCertificates.withLock { $0[name] = loaded.source }
            if let renewAt = entry.renewAt, clock.now() < renewAt { entry.state = .valid }
            entry.error = nil
            entry.backoff.succeeded()
            state.entries[name] = entry
            state.counters.pickedUp += 1
            return true
        }
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
                identity: Hex.string(sha256(pair.chainPEM + [0] + pair.keyPEM)), chainPEM: pair.chainPEM, keyPEM: pair.keyPEM,
                label: "acme:\(name)")
            let leaf = try CertificateChain(pem: pair.chainPEM).certificates[0]
            return Served(source: source, notBefore: info.notBefore, notAfter: info.notAfter, version: file.version, leafDER: leaf)
        } catch {
            logger.warning("a stored certificate is not used", metadata: ["name": "\(name)", "error": "\(error)"])
            return nil
        }
    }

    /// The oldest-wanted name that needs an order now, or nil. Also brings every entry's state up
    /// to date (queued, needs a hook, valid).
    func nextDue(now: Int64) -> String? {
        let hasHook = configuration.dnsHook != nil
        return state.withLock { state -> String? in
            let budgetOpen = now >= state.budgetBlockedUntil
            var best: (name: String, since: UInt64)?
            for (name, entry) in state.entries {
                let next: CertificateStatus.State
                var due = false
                if let renewAt = entry.renewAt, now < renewAt {
                    next = .valid
                } else if name.hasPrefix("*.") && !hasHook {
                    next = .needsDNSHook
                } else if !entry.backoff.mayAttempt(now: now) {
                    next = .failed
                } else if now < entry.lockRetryAt {
                    next = .waiting
                } else {
                    next = .queued
                    due = budgetOpen
                }
                // Written only when it changed: every write moves the version pages are built on.
                if next != entry.state { state.entries[name]?.state = next }
                if due, best == nil || entry.wantedSince < best!.since { best = (name, entry.wantedSince) }
            }
            return best?.name
        }
    }

    func setState(_ name: String, _ change: (inout Entry) -> Void) {
        state.withLock { state in
            guard var entry = state.entries[name] else { return }
            change(&entry)
            state.entries[name] = entry
        }
    }

    /// Renewal windows (ARI, RFC 9773) asked of the CA per pass at most, so a pass at 100,000
    /// names never keeps the thread from a due order for long.
    static let maximumRenewalChecksPerPass = 20
    /// §4.3: ask again when the CA's Retry-After says, kept between a minute and a day; six hours
    /// without one (the RFC's example); a day when the CA offers no ARI; an hour after an error.
    static let renewalCheckDefault: Int64 = 21_600
    static let renewalCheckBounds: ClosedRange<Int64> = 60...86_400
    static let renewalCheckAfterError: Int64 = 3_600

    /// Asks the CA for the renewal window of served certificates whose time to ask has come;
    /// a window that starts before the third-of-lifetime rule moves the renewal earlier (a CA
    /// revoking a batch puts its window in the past: the renewal happens at once).
    func checkRenewalWindows(now: Int64) {
        let due = state.withLock { state in
            state.entries.compactMap { name, entry in
                entry.served != nil && now >= entry.ariCheckAt ? (name, entry.served!.leafDER, entry.served!.version) : nil
            }.prefix(Self.maximumRenewalChecksPerPass)
        }
        for (name, leaf, version) in due {
            var renewAt: Int64?
            var next: Int64
            do {
                if let answer = try directoryClient().renewalInfo(leafDER: leaf, now: now) {
                    renewAt = max(now, answer.window.renewalTime(random: Double.random(in: 0..<1)))
                    next =
                        now
                        + min(
                            max(answer.retryAfter ?? Self.renewalCheckDefault, Self.renewalCheckBounds.lowerBound),
                            Self.renewalCheckBounds.upperBound)
                } else {
                    next = now + Self.renewalCheckBounds.upperBound
                }
            } catch {
                logger.warning("cannot read the CA's renewal window", metadata: ["name": "\(name)", "error": "\(error)"])
                next = now + Self.renewalCheckAfterError
            }
            setState(name) { entry in
                // The answer is for the certificate asked about, not one served since.
                guard entry.served?.version == version else { return }
                entry.ariRenewAt = renewAt
                entry.ariCheckAt = next
            }
            if let renewAt {
                logger.debug("renewal window read", metadata: ["name": "\(name)", "renewAt": "\(renewAt)"])
            }
        }
    }
}
