/// What a certificate manager reports of its names (the tenant API, /sites, `aasad sites`, the
/// metrics): each name's state and the counters, read under its state's mutex.
extension CertificateManager {
    /// Every wanted name's state, sorted by name.
    public func statuses() -> [CertificateStatus] { statusesByName().statuses.values.sorted { $0.name < $1.name } }

    /// One wanted name's state, or nil when the name is not wanted: what the tenant API's GET
    /// reports per name, without building every name's state (100,000 sites).
    public func status(of name: String) -> CertificateStatus? {
        state.withLock { state in
            state.entries[name].map { entry in
                Self.status(name, entry)
            }
        }
    }

    /// Every wanted name's state by name, and a version that changes whenever any of them does.
    public func statusesByName() -> (version: UInt64, statuses: [String: CertificateStatus]) {
        state.withLock { state in
            var statuses: [String: CertificateStatus] = [:]
            statuses.reserveCapacity(state.entries.count)
            for (name, entry) in state.entries {
                statuses[name] = Self.status(name, entry)
            }
            return (state.version, statuses)
        }
    }

    /// How many names are in each state.
    public func stateCounts() -> [CertificateStatus.State: Int] {
        state.withLock { state in state.entries.values.reduce(into: [:]) { $0[$1.state, default: 0] += 1 } }
    }

    /// Moves whenever any name's state does.
    public var version: UInt64 { state.withLock { $0.version } }

    public func counters() -> CertificateCounters {
        state.withLock { state in
            var counters = state.counters
            counters.queued = state.entries.values.count { $0.state == .queued }
            counters.earliestNotAfter = state.entries.values.compactMap { $0.served?.notAfter }.min()
            return counters
        }
    }

    private static func status(_ name: String, _ entry: Entry) -> CertificateStatus {
        CertificateStatus(
            name: name, state: entry.state, notAfter: entry.served?.notAfter, renewAt: entry.renewAt, error: entry.error,
            errorForTenant: entry.errorForTenant, nextAttempt: entry.state == .failed ? entry.backoff.nextAttempt : nil)
    }
}
