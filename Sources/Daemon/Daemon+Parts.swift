import AASA
package import Check
package import Foundation
package import HTTPServer
package import Logging
package import Outbound
package import Reactor
package import SiteStore
package import Synchronization

/// Parts of the daemon's start: what the settings make of the descriptor limit, the CDN watch,
/// and the listening sockets another process passed.
extension Daemon {
    /// Raises the descriptor limit and caps connections per worker so that they leave
    /// `DescriptorBudget.reserve` free for the reloader and the process: a server at its
    /// descriptor limit must still be able to open the files a reload reads.
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

/// `logging.level` values.
package enum LogLevel: String, CaseIterable, Sendable {
    case trace, debug, info, notice, warning, error, critical

    package var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}

/// `logging.format` values, and how a command prints its result: for people, or as JSON for
/// scripts (a stable interface).
package enum OutputFormat: String, CaseIterable, Sendable {
    case text
    case json
}

extension Daemon {
    /// The CDN watch when `cdn-watch.enabled` or `cdn-watch.google`: every exact host of every
    /// served site (a wildcard has no CDN entry of its own), with the AASA file served there for
    /// Apple's CDN, and the apps its assetlinks.json gives `handle_all_urls` to for Google's view.
    static func cdnWatch(_ settings: CDNWatchSettings, store: SnapshotStore, logger: Logger) throws(OutboundError) -> CDNWatch? {
        guard settings.isOn else { return nil }
        if settings.enabled {
            logger.info(
                "watching Apple's CDN copies",
                metadata: ["url": "\(settings.url)", "interval": "\(settings.interval)", "rate": "\(settings.rate)"])
        }
        if settings.google {
            // The key is never logged: only whether there is one.
            logger.info(
                "watching Google's Digital Asset Links view",
                metadata: [
                    "url": "\(settings.googleURL)", "key": "\(settings.googleKey == nil ? "none" : "set")",
                    "interval": "\(settings.interval)", "rate": "\(settings.rate) (shared with Apple's CDN)",
                ])
        }
        let digests = Mutex<[String: [UInt8]?]>([:])
        let links = Mutex<[String: ServedLinks]>([:])
        return try CDNWatch(
            settings: settings.watchSettings, logger: logger, generation: { store.snapshot().generation },
            targets: {
                // A site without an AASA file has nothing on Apple's CDN to compare, nor one
                // without an assetlinks.json giving an app handle_all_urls on Google's side.
                // Digests are kept by content (its ETag): a reload computes only new contents'
                // again, and sites serving the same file share one.
                let known = digests.withLock { $0 }
                let knownLinks = links.withLock { $0 }
                var fresh: [String: [UInt8]?] = [:]
                var freshLinks: [String: ServedLinks] = [:]
                var targets = CDNWatch.Targets(apple: [])
                for site in store.snapshot().sites.values {
                    let hosts = site.hosts.filter { !$0.isWildcard }
                    if settings.enabled, let file = site.aasa {
                        let digest = fresh[file.etag] ?? known[file.etag] ?? JSONComparison.digest(file.body)
                        fresh[file.etag] = digest
                        for host in hosts {
                            targets.apple.append(
                                CDNWatchSchedule.Target(host: host.name, site: site.directory, digest: digest, changedAt: file.lastModified)
                            )
                        }
                    }
                    if settings.google, let file = site.assetLinks {
                        let served = freshLinks[file.etag] ?? knownLinks[file.etag] ?? ServedLinks(file.body)
                        freshLinks[file.etag] = served
                        guard !served.apps.isEmpty else { continue }
                        for host in hosts {
                            targets.google.append(
                                CDNWatchSchedule.Target(
                                    host: host.name, site: site.directory, digest: served.digest, changedAt: file.lastModified))
                            targets.served[host.name] = (served.apps, served.includes)
                        }
                    }
                }
                digests.withLock { $0 = fresh }
                links.withLock { $0 = freshLinks }
                return targets
            })
    }

    /// What a served assetlinks.json gives Google's verifier to list: its `handle_all_urls` apps
    /// (none when it is not valid: the site's own problem says why), whether it includes other
    /// lists, and the apps' digest (`DALListing.digest`).
    struct ServedLinks: Sendable {
        var apps: Set<AndroidApp>
        var includes: Bool
        var digest: [UInt8]

        init(_ body: [UInt8]) {
            let served = AssetLinks.validate(body).document.map(DALListing.served) ?? (apps: [], includes: false)
            apps = served.apps
            includes = served.includes
            digest = DALListing.digest(served.apps)
        }
    }
}

extension Daemon {
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
            throw StartFailure()
        }
        let kinds = ["https", "http", "admin"]
        let known = kinds + kinds.map { "aasad-" + $0 }
        if let unknown = passed.first(where: { !known.contains($0.name) }) {
            logger.critical(
                "a passed socket is named \(unknown.name.debugDescription); name each FileDescriptorName= https, http or admin")
            throw StartFailure()
        }
        let admins = passed.filter { $0.name == "admin" }.count
        if admins > 1 || (admins == 1 && !adminEnabled) {
            logger.critical(
                admins > 1
                    ? "\(admins) passed sockets are named admin; pass one"
                    : "a socket named admin was passed while admin is off; pass none, or turn admin on")
            throw StartFailure()
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
