import ArgumentParser
import Check
import Foundation
import HTTPServer
import Logging
import Outbound
import Reactor
import SiteStore
import Synchronization

/// Where serve's settings come from (aasad.yaml, AASAD_* variables, flags), what they make of the
/// descriptor limit.
extension ServeCommand {
    /// The settings: aasad.yaml, then AASAD_* variables, then these flags (at start, and again
    /// whenever aasad.yaml changes: `SettingsFollower`).
    func settings(
        environment: [String: String]
    ) -> (ServerSettings, [ServerSettings.Problem], unknown: [String]) {
        var (settings, problems) = ServerSettings.load(configDirectory: config)
        let fromEnvironment = settings.apply(environment: environment)
        problems += fromEnvironment.problems
        func flag(_ name: String, _ key: String, _ values: [String]?) {
            guard let values, !values.isEmpty else { return }
            if let problem = settings.apply(flag: name, key: key, values) { problems.append(problem) }
        }
        flag("--https", "listen.https", https)
        flag("--http", "listen.http", http)
        flag("--http-redirect", "listen.http-redirect", httpRedirect.map { ["\($0)"] })
        flag("--https-port", "listen.https-port", httpsPort.map { ["\($0)"] })
        flag("--threads", "threads", threads.map { ["\($0)"] })
        flag("--state", "state", state.map { [$0] })
        flag("--user", "user", user.map { [$0] })
        flag("--pid-file", "pid-file", pidFile.map { [$0] })
        flag("--cache-control", "cache-control", cacheControl.map { [$0] })
        flag("--handshake-timeout", "timeouts.handshake", handshakeTimeout.map { ["\($0)"] })
        flag("--request-timeout", "timeouts.request", requestTimeout.map { ["\($0)"] })
        flag("--idle-timeout", "timeouts.idle", idleTimeout.map { ["\($0)"] })
        flag("--write-timeout", "timeouts.write", writeTimeout.map { ["\($0)"] })
        flag("--drain-timeout", "timeouts.drain", drainTimeout.map { ["\($0)"] })
        flag("--shutdown-delay", "timeouts.shutdown-delay", shutdownDelay.map { ["\($0)"] })
        flag("--max-connections", "limits.max-connections", maxConnections.map { ["\($0)"] })
        flag("--tls-min-version", "tls.min-version", tlsMinVersion.map { [$0] })
        flag("--admin", "admin", admin.map { [$0] })
        flag("--rescan-interval", "watch.rescan-interval", rescanInterval.map { ["\($0)"] })
        flag("--watch", "watch.enabled", watch.map { ["\($0)"] })
        flag("--log-level", "logging.level", logLevel.map { [$0.rawValue] })
        flag("--log-format", "logging.format", logFormat.map { [$0.rawValue] })
        flag("--access-log", "logging.access-log", accessLog.map { [$0] })
        if problems.isEmpty { problems += settings.consistencyProblems(source: "settings") }
        return (settings, problems, fromEnvironment.unknown)
    }

    /// Raises the descriptor limit and caps connections per worker so that they leave
    /// `DescriptorBudget.reserve` free for the reloader and the process (issue 10).
    static func descriptorLimits(_ settings: ServerSettings, workers: Int, logger: Logger) -> Limits {
        var limits = settings.limits
        let descriptors = DescriptorBudget.raise()
        let reserve = DescriptorBudget.reserve(
            workers: workers, listenAddresses: settings.https.count + settings.http.count,
            cores: ProcessInfo.processInfo.activeProcessorCount)
        guard
            let perWorker = DescriptorBudget.connectionsPerWorker(
                configured: limits.maxConnections, descriptors: descriptors.limit, workers: workers, reserve: reserve)
        else {
            logger.warning(
                "the descriptor limit leaves no reserve for reloading; raise it (ulimit -n, LimitNOFILE=)",
                metadata: ["limit": "\(descriptors.limit)", "reserve": "\(reserve)"])
            return limits
        }
        if limits.maxConnections != 0 && perWorker < limits.maxConnections {
            logger.notice(
                "limits.max-connections lowered to what the descriptor limit allows",
                metadata: ["configured": "\(limits.maxConnections)", "perWorker": "\(perWorker)"])
        }
        limits.maxConnections = perWorker
        logger.info(
            "descriptors",
            metadata: [
                "limit": "\(descriptors.limit)", "raisedFrom": "\(descriptors.before.map(String.init) ?? "-")", "reserve": "\(reserve)",
                "connectionsPerWorker": "\(perWorker)",
            ])
        return limits
    }
}

/// `--log-level` values.
enum LogLevel: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}

extension ServeCommand {
    /// The CDN watch when `cdn-watch.enabled`: every exact host of every served site (a wildcard
    /// has no CDN entry of its own), with the AASA file served there.
    static func cdnWatch(_ settings: CDNWatchSettings, store: SnapshotStore, logger: Logger) throws(OutboundError) -> CDNWatch? {
        guard settings.enabled else { return nil }
        logger.info(
            "watching Apple's CDN copies",
            metadata: ["url": "\(settings.url)", "interval": "\(settings.interval)", "rate": "\(settings.rate)"])
        let digests = Mutex<[String: [UInt8]?]>([:])
        return try CDNWatch(
            settings: settings.watchSettings, logger: logger, generation: { store.snapshot().generation },
            targets: {
                // A site without an AASA file has nothing on Apple's CDN to compare. Digests are
                // kept by content (its ETag): a reload computes only new contents' again, and
                // sites serving the same file share one.
                let known = digests.withLock { $0 }
                var fresh: [String: [UInt8]?] = [:]
                var targets: [CDNWatchSchedule.Target] = []
                for site in store.snapshot().sites.values {
                    guard let file = site.aasa else { continue }
                    let digest = fresh[file.etag] ?? known[file.etag] ?? JSONComparison.digest(file.body)
                    fresh[file.etag] = digest
                    for host in site.hosts where !host.isWildcard {
                        targets.append(
                            CDNWatchSchedule.Target(host: host.name, site: site.directory, digest: digest, changedAt: file.lastModified))
                    }
                }
                digests.withLock { $0 = fresh }
                return targets
            })
    }
}

extension ServeCommand {
    /// Listening sockets passed by systemd socket activation (deploy/systemd/aasad.socket), named
    /// by `FileDescriptorName=`: `https`, `http` or `admin`. They replace the addresses of their
    /// kind, so that `systemctl restart` keeps them open and queued connections wait for the new
    /// process instead of being refused.
    ///
    /// An in-place upgrade passes the same way, and names the sockets the old process bound
    /// itself `aasad-https`, `aasad-http` and `aasad-admin`: those are adopted by the addresses
    /// still configured (`Server.Configuration.adopted`) rather than replacing them.
    static func passedListeners(
        adminEnabled: Bool, logger: Logger
    ) throws -> (inherited: [SocketActivation.Listener], adopted: [SocketActivation.Listener]) {
        let passed: [SocketActivation.Listener]
        do {
            passed = try SocketActivation.take(environment: ProcessInfo.processInfo.environment)
        } catch {
            logger.critical("the passed sockets cannot be used", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        let kinds = ["https", "http", "admin"]
        let known = kinds + kinds.map { "aasad-" + $0 }
        if let unknown = passed.first(where: { !known.contains($0.name) }) {
            logger.critical(
                "a passed socket is named \(unknown.name.debugDescription); name each FileDescriptorName= https, http or admin")
            throw ExitCode(1)
        }
        let admins = passed.filter { $0.name == "admin" }.count
        if admins > 1 || (admins == 1 && !adminEnabled) {
            logger.critical(
                admins > 1
                    ? "\(admins) passed sockets are named admin; pass one"
                    : "a socket named admin was passed while admin is off; pass none, or turn admin on")
            throw ExitCode(1)
        }
        if passed.isEmpty && ProcessInfo.processInfo.environment["INVOCATION_ID"] != nil {
            logger.debug("started by systemd without passed sockets: restarts close the listeners (deploy/systemd/aasad.socket keeps them)")
        }
        let adopted = passed.filter { $0.name.hasPrefix("aasad-") }
        let inherited = passed.filter { !$0.name.hasPrefix("aasad-") }
        if !inherited.isEmpty {
            logger.info(
                "listening on passed sockets (socket activation)", metadata: ["names": "\(inherited.map(\.name).joined(separator: ","))"])
        }
        if !adopted.isEmpty {
            logger.info("taking over the listeners of the process being upgraded", metadata: ["count": "\(adopted.count)"])
        }
        return (inherited, adopted)
    }
}
