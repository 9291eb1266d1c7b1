package import Foundation
package import Glibc

/// The process's file descriptors: raised to what the system allows at start, and
/// shared so that client connections can never take the last ones the reloader needs. A reload
/// that fails with EMFILE keeps the last good files (SiteRegistry), but a reload that can never
/// run would leave a changed site stale for as long as the connections stay.
package enum DescriptorBudget {
    /// Descriptors outside any worker: standard streams, the log and access log files, the admin
    /// listener and a few admin connections, inotify, the systemd notify socket, what OpenSSL and
    /// the C library open (/dev/urandom, /etc files at start).
    static let processReserve = 32
    /// Per worker: its epoll, wake-up and timer descriptors, with headroom.
    static let workerReserve = 4
    /// The reloader reads sites on every core at once (SiteRegistry.examine), each read holding a
    /// site directory listing and one file open: two per core, doubled for the watcher's own
    /// reads and a rescan overlapping a single-site reload.
    static let readsPerCore = 4

    /// Descriptors kept free of client connections.
    static func reserve(workers: Int, listenAddresses: Int, cores: Int) -> Int {
        processReserve + workers * (workerReserve + listenAddresses) + cores * readsPerCore
    }

    /// Raises the soft RLIMIT_NOFILE to the hard limit (the soft default of 1024 on many systems
    /// is far below what a server for thousands of clients needs; the hard limit is what the
    /// administrator allows). Returns the soft limit in force, and the one before when raised.
    static func raise() -> (limit: Int, before: Int?) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (1024, nil) }
        let before = limit.rlim_cur
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // RLIM_INFINITY and limits above Int.max are clamped: the count only divides connections.
        let current = limit.rlim_cur >= rlim_t(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
        return (current, limit.rlim_cur == before ? nil : (before >= rlim_t(Int32.max) ? Int(Int32.max) : Int(before)))
    }

    /// Connections per worker: the configured number (0: none), capped so that all workers'
    /// connections leave the reserve free. When the limit leaves no room for a reserve at all
    /// (a tiny `ulimit -n`), nil: the workers' EMFILE pause is then the only guard.
    static func connectionsPerWorker(configured: Int, descriptors: Int, workers: Int, reserve: Int) -> Int? {
        let available = (descriptors - reserve) / max(1, workers)
        guard available >= 1 else { return nil }
        return configured == 0 ? available : min(configured, available)
    }
}
