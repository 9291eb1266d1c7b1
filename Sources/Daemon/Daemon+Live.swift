package import ACME
package import Check
package import Foundation
package import HTTPServer
package import Logging
package import Reactor
package import SiteStore
package import Synchronization

/// A part of the server a changed aasad.yaml may replace while serving: the certificate manager,
/// the CDN watch. Readers take the one in force at each use.
package final class Current<T: AnyObject & Sendable>: Sendable {
    private let state: Mutex<T?>

    init(_ value: T?) {
        state = Mutex(value)
    }

    var value: T? { state.withLock { $0 } }

    /// Puts `value` in force; returns the one it replaces.
    func swap(_ value: T?) -> T? {
        state.withLock { current in
            let old = current
            current = value
            return old
        }
    }
}

/// Follows aasad.yaml while serving: on each change the settings are read again (the
/// file, then AASAD_* variables and flags as at start), and what can change under a running
/// server changes; an invalid file changes nothing. Keys that need new listeners, threads or a
/// new user are reported: they apply with an in-place upgrade (SIGUSR2) or a restart.
package final class SettingsFollower: Sendable {
    /// What changed, for `apply`: the settings before and after.
    struct Change {
        var old: ServerSettings
        var new: ServerSettings
    }

    private let state: Mutex<ServerSettings>
    private let logger: Logger
    private let read: @Sendable () -> (ServerSettings, [ServerSettings.Problem], unknown: [String])
    /// Applies a change; throws (having changed nothing) when a part cannot be made, e.g. an
    /// access log that cannot be opened. Returns whether every served file is to be prepared
    /// again.
    private let apply: @Sendable (Change) throws -> Bool

    init(
        inForce: ServerSettings, logger: Logger,
        read: @escaping @Sendable () -> (ServerSettings, [ServerSettings.Problem], unknown: [String]),
        apply: @escaping @Sendable (Change) throws -> Bool
    ) {
        state = Mutex(inForce)
        self.logger = logger
        self.read = read
        self.apply = apply
    }

    /// Keys only a new process can apply (listeners, threads, the user, the state directory, TLS
    /// versions, the watcher, the PID file, turning automatic certificates on or off): the
    /// schema's, so that a key is never reported and applied at once.
    private static var newProcessKeys: [Setting] { SettingsSchema.all.filter { $0.applies == .newProcess } }

    /// The keys of `newProcessKeys` whose value differs.
    static func restartOnly(_ old: ServerSettings, _ new: ServerSettings) -> [String] {
        newProcessKeys.filter { key in
            var kept = new
            key.keep(&kept, old)
            return kept != new
        }.map(\.reported)
    }

    /// The settings with the keys only a new process applies kept as they are in force.
    static func live(_ new: ServerSettings, keeping old: ServerSettings) -> ServerSettings {
        var applied = new
        for key in newProcessKeys { key.keep(&applied, old) }
        return applied
    }

    /// The settings in force (as started, with the changes applied since).
    var inForce: ServerSettings { state.withLock { $0 } }

    /// Reads the settings again and applies what changed. Returns whether every served file is
    /// to be prepared again (cache-control changed).
    @discardableResult
    func follow() -> Bool {
        // Read under the lock: two changes in a row apply in the order they were read.
        state.withLock { inForce in
            let (new, problems, _) = read()
            return follow(&inForce, new, problems: problems)
        }
    }

    /// Applies `new` (read with `problems`) as a changed file would. Returns whether every
    /// served file is to be prepared again.
    func follow(_ new: ServerSettings, problems: [ServerSettings.Problem]) -> Bool {
        state.withLock { inForce in follow(&inForce, new, problems: problems) }
    }

    private func follow(_ inForce: inout ServerSettings, _ new: ServerSettings, problems: [ServerSettings.Problem]) -> Bool {
        do {
            guard problems.isEmpty else {
                for problem in problems { logger.error("\(problem)") }
                logger.error("\(ServerSettings.fileName) changed but is not valid; the settings in force are kept")
                return false
            }
            let pending = Self.restartOnly(inForce, new)
            let applied = Self.live(new, keeping: inForce)
            if !pending.isEmpty {
                logger.warning(
                    "\(ServerSettings.fileName): these changes need a new process; they apply with an in-place upgrade (kill -USR2 \(getpid())) or a restart, and are reported again at each change until then",
                    metadata: ["keys": "\(pending.joined(separator: ", "))"])
            }
            guard applied != inForce else { return false }
            do {
                let prepareAgain = try apply(Change(old: inForce, new: applied))
                inForce = applied
                return prepareAgain
            } catch {
                logger.error(
                    "\(ServerSettings.fileName) changed but cannot be applied; the settings in force are kept",
                    metadata: ["error": "\(error)"])
                return false
            }
        }
    }
}

extension Daemon {
    struct ApplyFailure: Error, CustomStringConvertible {
        var description: String
    }

    /// Applies a settings change to the running server. Every part that can fail (the access
    /// log's file, a new certificate manager, a new CDN watch) is made first; only when all are
    /// made does anything change.
    static func apply(
        _ change: SettingsFollower.Change, server: Server.Tuner, sites: LockedRegistry, adminHosts: AdminHosts,
        certificateManager: Current<CertificateManager>,
        retiringManager: Current<CertificateManager>,
        cdnWatch: Current<CDNWatch>, store: SnapshotStore, names: @Sendable () -> [String: [String]], workers: Int, logger: Logger
    ) throws -> Bool {
        let (old, new) = (change.old, change.new)
        var changed: [String] = []
        let json = new.logFormat == .json
        // Made first: each may fail, and then nothing changes. The access log follows the log
        // format; the one in force goes on (never reopened) when neither changed.
        let logChanged = new.accessLog != old.accessLog || new.logFormat != old.logFormat
        var accessLog = server.current.accessLog
        if logChanged {
            do {
                accessLog = try new.accessLog.map { try AccessLog(destination: $0, format: json ? .json : .text) }
            } catch {
                throw ApplyFailure(description: "\(error)")
            }
        }
        // A new budget alone is set on the running manager; any other acme change replaces it.
        let running = certificateManager.value
        let budgetOnly = running != nil && new.acme.differsOnlyInBudget(from: old.acme)
        let replaceManager = new.acme != old.acme && !budgetOnly
        let manager: CertificateManager?
        if replaceManager {
            do {
                manager = try Self.certificateManager(settings: new, names: names(), logger: logger)
            } catch {
                throw ApplyFailure(description: "automatic certificates cannot start with the new acme settings: \(error)")
            }
        } else {
            manager = nil
        }
        let watch: CDNWatch?
        if new.cdnWatch != old.cdnWatch {
            do {
                watch = try Self.cdnWatch(new.cdnWatch, store: store, logger: logger)
            } catch {
                // The new manager is never started: its replica record goes with it.
                manager?.stop()
                throw ApplyFailure(description: "the CDN watch cannot start with the new cdn-watch settings: \(error)")
            }
        } else {
            watch = nil
        }

        if new.logLevel != old.logLevel || new.logFormat != old.logFormat {
            LogControl.shared.set(level: new.logLevel.level, json: json)
            changed.append("logging")
        }
        if new.limits != old.limits || logChanged {
            let limits = new.limits != old.limits ? descriptorLimits(new, workers: workers, logger: logger) : server.current.limits
            server.tune(limits: limits, accessLog: accessLog)
            changed.append(new.limits != old.limits ? "timeouts and limits" : "access log")
            if new.limits != old.limits && logChanged { changed.append("access log") }
        }
        if new.adminHosts != old.adminHosts {
            adminHosts.set(new.adminHosts)
            changed.append("admin-hosts")
        }
        let prepareAgain = new.cacheControl != old.cacheControl
        if prepareAgain {
            sites.setOptions(ServingOptions(cacheControl: new.cacheControl))
            changed.append("cache-control")
        }
        if budgetOnly, let running {
            running.setOrdersPerHour(new.acme.ordersPerHour)
            changed.append("acme.orders-per-hour")
        }
        if replaceManager {
            // The new manager runs before it is in force; the old one stops on its own thread
            // (an order in flight may take minutes) and answers its own challenges meanwhile.
            // Names someone asked for stay asked for under the new settings (a raised budget
            // is how an operator gets them ordered sooner).
            if let manager, let previous = certificateManager.value {
                for name in previous.demandedNames() { manager.demand(name) }
            }
            manager?.start()
            let previous = certificateManager.swap(manager)
            _ = retiringManager.swap(previous)
            _ = LoopThread.spawn {
                previous?.stop()
                _ = retiringManager.swap(nil)
            }
            changed.append("acme")
        }
        if new.cdnWatch != old.cdnWatch {
            if let watch, let previous = cdnWatch.value { watch.takePauses(from: previous) }
            watch?.start()
            let previous = cdnWatch.swap(watch)
            _ = LoopThread.spawn { previous?.stop() }
            changed.append("cdn-watch")
        }
        logger.notice("\(ServerSettings.fileName) applied", metadata: ["changed": "\(changed.joined(separator: "; "))"])
        return prepareAgain
    }
}
