import Logging

/// What replicas sharing the storage learn from each other besides certificates and locks
/// (`ReplicaRecords`): a failed order's back-off, which every replica honours, and names asked
/// for, which every replica orders in the demanded tier.
extension CertificateManager {
    /// Records a failed order's back-off for the other replicas; a write that fails costs them
    /// at most one more order and is logged (unless `quiet`: a rebase already logged).
    func shareFailure(_ name: String, _ failure: ReplicaRecords.Failure, quiet: Bool = false) {
        do {
            if let fault = failureWriteFault.withLock({ $0?(name) }) { throw fault }
            try records.writeFailure(name, failure)
        } catch {
            guard !quiet else { return }
            logger.warning(
                "cannot record a failed order's back-off for the other replicas", metadata: ["name": "\(name)", "error": "\(error)"])
        }
    }

    /// Takes on the back-off another replica recorded for `name` (read with the name's lock
    /// held, so no order of it is under way): true when it has not ended, and the name waits
    /// without an order. Its failures are taken on either way, so the next failure here backs
    /// off as long as the next one there would. A record whose failure is further ahead of this
    /// clock than `ReplicaRecords.clockSkewTolerance` (the writer's clock fast, or this one
    /// slow) is written again on this clock (`BackoffRecord.rebased`: the lock is held, and
    /// only a holder writes it), so its wait holds once from now, the count carries on, and the
    /// skew is logged once per record. A rebase that cannot be written finds the same record at
    /// the next read: that read takes the rebase made at the first (`Entry.skewRebased`, one
    /// record per name), tries its write again quietly and logs nothing, so the wait still holds
    /// once and does not start again at every read.
    func adoptSharedBackoff(_ name: String, now: Int64) -> Bool {
        guard var failure = records.failure(name) else { return false }
        if BackoffRecord.effectiveNextAttempt(failure, now: now) == nil {
            let found = failure
            let rebased = BackoffRecord.rebased(found, now: now)
            var earlier: BackoffRecord?
            setState(name) { entry in
                if let seen = entry.skewRebased, seen.found == found {
                    earlier = seen.rebased
                } else {
                    entry.skewRebased = (found, rebased)
                }
            }
            if earlier == nil {
                logger.warning(
                    "a failed order's back-off recorded by another replica is dated ahead of this clock; its wait counts from now (check the replicas' clocks)",
                    metadata: [
                        "name": "\(name)", "failedAt": "\(failure.failedAt)", "now": "\(now)",
                        "tolerance": "\(ReplicaRecords.clockSkewTolerance)",
                    ])
            }
            failure = earlier ?? rebased
            shareFailure(name, failure, quiet: earlier != nil)
        }
        let next = BackoffRecord.effectiveNextAttempt(failure, now: now) ?? failure.nextAttempt
        let waits = now < next
        setState(name) { entry in
            entry.backoff.adopt(failures: failure.failures, nextAttempt: waits ? next : nil)
            guard waits else { return }
            entry.state = .failed
            entry.error =
                "an order for this name failed on a replica sharing the storage (failure \(failure.failures) in a row); no order before \(next)"
            entry.errorForTenant = ACMEError.serverSideSummary
        }
        if waits {
            logger.notice(
                "another replica's order for this name failed; waiting for its back-off",
                metadata: ["name": "\(name)", "failures": "\(failure.failures)", "nextAttempt": "\(next)"])
        }
        return waits
    }

    /// Writes demand records for `names`, just asked for here, while the directory holds fewer
    /// than `ReplicaRecords.maximumDemandRecords` records (counted once per batch); names past
    /// the bound, and those no record is written for (`shareable`), stay demanded on this
    /// replica only. `quiet`: a retry at a look at storage, which logs nothing (the first try
    /// did), so a full folder is not logged every 10 s. `rewrite`: records that are there
    /// already, rewritten in place, which add no file and so need no room.
    func recordDemand(_ names: [String], now: Int64, quiet: Bool = false, rewrite: Bool = false) {
        let names = shareable(names, now: now)
        guard !names.isEmpty else { return }
        var room = rewrite ? names.count : ReplicaRecords.maximumDemandRecords - records.demandRecordCount()
        var written: [String] = []
        for name in names where room > 0 {
            do {
                try records.writeDemand(name, at: now)
                written.append(name)
                room -= 1
            } catch {
                if !quiet {
                    logger.warning(
                        "cannot record a demanded name for the other replicas", metadata: ["name": "\(name)", "error": "\(error)"])
                }
            }
        }
        if written.count < names.count && !quiet {
            logger.notice(
                "demanded names not shared with the other replicas: the storage holds the most demand records it may",
                metadata: ["limit": "\(ReplicaRecords.maximumDemandRecords)", "names": "\(names.count - written.count)"])
        }
        guard !written.isEmpty else { return }
        state.withLock { state in
            for name in written { state.entries[name]?.demandRecordedAt = now }
        }
    }

    /// Of `names`, those whose demand another replica could act on, so worth a record in the
    /// shared folder: not capped, not a wildcard without a DNS hook, not in back-off (an order
    /// would not be placed anywhere), asked for here within `ReplicaRecords.maximumDemandAge`,
    /// and within their site's `ReplicaRecords.maximumDemandRecordsPerSite` (records this
    /// replica knows of: its own not yet expired, and those it read). Without this, names
    /// that can never be served held the folder's 256 records for good.
    func shareable(_ names: [String], now: Int64) -> [String] {
        guard !names.isEmpty else { return [] }
        let hasHook = configuration.dnsHook != nil
        return state.withLock { state in
            let asked = Set(names)
            var perSite: [String: Int] = [:]
            for (name, entry) in state.entries where !asked.contains(name) {
                guard entry.demandShared || (entry.demandRecordedAt.map { now - $0 < ReplicaRecords.demandLifetime } ?? false),
                    let site = state.queue.site(of: name)
                else { continue }
                perSite[site, default: 0] += 1
            }
            let capped = state.queue.capped { state.entries[$0]?.served != nil }
            return names.filter { name in
                guard let entry = state.entries[name], entry.served == nil, !capped.contains(name), hasHook || !name.hasPrefix("*."),
                    entry.backoff.mayAttempt(now: now), let seen = entry.demandSeenAt, now - seen < ReplicaRecords.maximumDemandAge,
                    let site = state.queue.site(of: name), perSite[site, default: 0] < ReplicaRecords.maximumDemandRecordsPerSite
                else { return false }
                perSite[site, default: 0] += 1
                return true
            }
        }
    }

    /// At each look at storage: names asked for of other replicas join the demanded tier here
    /// (since their record's time), those whose record is gone or expired leave it, and this
    /// replica's own demand records older than half their lifetime are written again.
    func shareDemand(now: Int64) {
        var live = records.demands(now: now)
        var refresh: [String] = []
        var unrecorded: [String] = []
        state.withLock { state in
            Self.resolveDigested(&live, names: state.entries.keys)
            for (name, time) in live {
                guard var entry = state.entries[name], entry.served == nil, entry.demandedAt == nil else { continue }
                entry.demandedAt = time
                entry.demandShared = true
                state.entries[name] = entry
            }
            for (name, entry) in state.entries where entry.demandedAt != nil && entry.served == nil {
                if entry.demandShared {
                    if live[name] == nil {
                        state.entries[name]?.demandedAt = nil
                        state.entries[name]?.demandShared = false
                    }
                } else if entry.demandRecordedAt != nil && live[name] != nil {
                    if now - (entry.demandRecordedAt ?? now) >= ReplicaRecords.demandLifetime / 2 { refresh.append(name) }
                } else {
                    // Never written (the folder was full, a write failed, the name was not
                    // `shareable`), or removed since (as expired by a replica whose clock runs
                    // ahead): written again if there is room.
                    unrecorded.append(name)
                }
            }
        }
        recordDemand(refresh, now: now, rewrite: true)
        recordDemand(unrecorded, now: now, quiet: true)
    }

    /// Puts each digested component among `live`'s keys (a name too long for its readable file
    /// name, `StorageName`) back to the name of `names` it stands for; one that stands for none
    /// of them is dropped. Only names longer than a readable component are digested, so only
    /// those are looked at, and only when a digested key is there.
    static func resolveDigested(_ live: inout [String: Int64], names: some Sequence<String>) {
        let digested = live.keys.filter(StorageName.isDigested)
        guard !digested.isEmpty else { return }
        var times: [String: Int64] = [:]
        for key in digested { times[key] = live.removeValue(forKey: key) }
        for name in names where name.utf8.count > StorageName.maximumComponentBytes - "_wildcard_".utf8.count {
            guard let component = try? StorageName.component(name), let time = times[component] else { continue }
            live[name] = time
        }
    }
}
