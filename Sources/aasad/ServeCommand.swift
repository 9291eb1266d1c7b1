import AASA
import ACME
import ArgumentParser
import Check
import Foundation
import HTTPServer
import Logging
import Reactor
import SiteStore
import Synchronization
import TLS

/// `aasad serve`: the daemon.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the config directory's sites over HTTPS (and optionally plain HTTP).",
        discussion: """
            Each site answers /.well-known/apple-app-site-association, /apple-app-site-association \
            and /.well-known/assetlinks.json. Without any certificate in the config directory, a \
            development CA and certificate for the configured hosts are made in the state directory. \
            SIGHUP reloads the config directory (and reopens the access log); SIGUSR2 starts the \
            binary at the same path with the listening sockets, and once it is ready this process \
            drains and exits (an in-place upgrade); SIGTERM and SIGINT stop after open connections \
            finish. Settings come from the config directory's \
            aasad.yaml, then AASAD_* environment variables (AASAD_TIMEOUTS_IDLE for timeouts.idle), \
            then these flags, each overriding the one before.
            """
    )

    @Option(help: "The config directory (environment: AASAD_CONFIG).")
    var config: String = ProcessInfo.processInfo.environment["AASAD_CONFIG"] ?? "config"

    @Option(help: "An HTTPS address to listen on, e.g. :443 or 127.0.0.1:8443 (repeatable; default :8443).")
    var https: [String] = []

    @Option(help: "A plain HTTP address to listen on, for local testing or with --http-redirect (repeatable; default none).")
    var http: [String] = []

    @Flag(
        inversion: .prefixedNo,
        help: "Answer every plain HTTP request (but ACME's HTTP-01) with a redirect to the same URL over HTTPS (default: off).")
    var httpRedirect: Bool?

    @Option(help: "The HTTPS port written in those redirects, as clients reach it (default: the first --https address's port).")
    var httpsPort: Int?

    @Option(help: "Worker threads, each with its own event loop (default: one per core).")
    var threads: Int?

    @Option(help: "Where the development certificate is kept (default: state).")
    var state: String?

    @Option(help: "After binding, run as this user (and its group): start as root to bind 443.")
    var user: String?

    @Option(help: "Write the serving process's id to this file; an upgrade (SIGUSR2) hands it to the new process (default: none).")
    var pidFile: String?

    @Option(help: "Cache-Control of served files (default: \(ServingOptions.defaultCacheControl)).")
    var cacheControl: String?

    @Option(help: "Seconds a TLS handshake may take (default: \(Limits().handshakeTimeout)).")
    var handshakeTimeout: Int64?

    @Option(help: "Seconds a request head may take once begun (default: \(Limits().requestTimeout)).")
    var requestTimeout: Int64?

    @Option(help: "Seconds an idle keep-alive connection is kept (default: \(Limits().idleTimeout)).")
    var idleTimeout: Int64?

    @Option(help: "Seconds a client may take to read a pending response (default: \(Limits().writeTimeout)).")
    var writeTimeout: Int64?

    @Option(help: "On SIGTERM/SIGINT, seconds open connections get to finish (default: \(Limits().drainTimeout)).")
    var drainTimeout: Int64?

    @Option(
        help:
            "On SIGTERM/SIGINT, seconds to go on serving with /readyz answering 503 before accepting stops, for load balancers that follow readiness (default: 0)."
    )
    var shutdownDelay: Int64?

    @Option(help: "Connections one worker keeps open at most; 0 for no limit (default: 0).")
    var maxConnections: Int?

    @Option(help: "The oldest TLS version accepted: 1.2 or 1.3 (default: 1.2).")
    var tlsMinVersion: String?

    @Option(help: "The admin listener (plain HTTP: /healthz, /readyz, /metrics, /sites), or off (default: 127.0.0.1:9190).")
    var admin: String?

    @Option(help: "Seconds between full rescans of the config directory, for filesystems where inotify is silent (default: none).")
    var rescanInterval: Int64?

    @Flag(inversion: .prefixedNo, help: "Follow the config directory with inotify and apply changes as they happen (default: on).")
    var watch: Bool?

    @Option(help: "Log level (default: info).")
    var logLevel: LogLevel?

    @Option(help: "Log format: text (one line per event) or json (one object per line) (default: text).")
    var logFormat: OutputFormat?

    @Option(help: "Access log: off, stdout, stderr or a file path, reopened on SIGHUP (default: off).")
    var accessLog: String?

    func run() throws {
        // Taken before anything can fail: an exit before readiness is the upgrade's failure.
        let environment = ProcessInfo.processInfo.environment
        let upgradeReadiness = Upgrade.takeReadiness(environment: environment)
        let (settings, problems, unknownVariables) = settings(environment: environment)
        if let problem = problems.first(where: { $0.source == "flag" }) {
            throw ValidationError("\(problem.key): \(problem.escapedMessage).")
        }
        guard problems.isEmpty else {
            for problem in problems { printError("error: \(problem)") }
            printError(
                "aasad: the settings are not valid; nothing was started (check them with: aasad validate \(TerminalText.escaped(config)))")
            throw ExitCode(1)
        }
        let json = settings.logFormat == .json
        LogControl.shared.set(level: settings.logLevel.level, json: json)
        LoggingSystem.bootstrap { label in SwitchingLogHandler(label: label) }
        let logger = Logger(label: "aasad")
        // Passed sockets first (sd_listen_fds(3): early, before other descriptors are opened and
        // threads started): they are made close-on-exec and the variables removed.
        let passed = try Self.passedListeners(adminEnabled: settings.admin != nil, logger: logger)
        let upgrade = Upgrade(pidFile: settings.pidFile, logger: logger)
        // The replaced process's ticket keys (only in a process an upgrade started): its
        // clients resume here.
        Upgrade.takeTicketKeys(environment: environment, upgrading: upgradeReadiness != nil, logger: logger)
        for name in unknownVariables {
            logger.warning(
                "\(name) is not a setting; ignored", metadata: ["settings": "\(ServerSettings.environmentNames.joined(separator: " "))"])
        }
        let workerCount = settings.threads ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let limits = Self.descriptorLimits(settings, workers: workerCount, logger: logger)
        let accessLog: AccessLog?
        do {
            accessLog = try settings.accessLog.map { try AccessLog(destination: $0, format: json ? .json : .text) }
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
        // OpenSSL writes to sockets itself: a peer that went away must not kill the process.
        signal(SIGPIPE, SIG_IGN)
        // Signals are taken by sigwait on this thread only; workers inherit the blocked mask.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGUSR2] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        // Verdicts of the contents validated before, so that a restart validates only what changed
        // (issue 14); without a directory for them, every start validates everything.
        let cacheDirectory = settings.state + "/cache"
        do {
            try Privileges.refuseLinks(inState: settings.state, ["cache", "dev-tls"] + (settings.acme.storage == nil ? ["acme"] : []))
        } catch {
            logger.critical("cannot use the state directory", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        try? FileManager.default.createDirectory(
            atPath: cacheDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let knownValidFile = KnownValid.binaryIdentity().map { (path: cacheDirectory + "/validated-contents", identity: $0) }
        let registry = SiteRegistry(
            root: config, options: ServingOptions(cacheControl: settings.cacheControl), logger: logger,
            checkCertificate: ConfigLoading.check, knownValidFile: knownValidFile,
            servedFirstFile: ConfigLoading.servedFirstFile(state: settings.state))
        // Watched before it is read: what changes while the first load runs (seconds at 100,000
        // sites) is in the watcher's first batch.
        var watcher: ConfigWatcher?
        if settings.watch {
            do {
                watcher = try ConfigWatcher(root: config, rescanInterval: settings.rescanInterval, logger: logger)
            } catch {
                logger.warning("cannot watch the config directory; changes apply on SIGHUP only", metadata: ["error": "\(error)"])
            }
        }
        registry.reloadAll()
        let store = SnapshotStore(registry.snapshot)
        let certificates = try Self.certificates(
            snapshot: registry.snapshot, state: settings.state, automatic: settings.acme.directory != nil, logger: logger)
        let sites = LockedRegistry(registry, fallback: certificates.developmentAuthority != nil ? .development : .otherSite)
        let ready = AtomicFlag()
        let acmeNames = ACMENames()
        // Stored certificates load before the listeners accept anything: with SO_REUSEPORT a
        // restarting replica gets clients (Apple's CDN among them) from its first accept.
        let firstManager: CertificateManager?
        do {
            firstManager = try Self.certificateManager(
                settings: settings, names: acmeNames.names(in: registry.snapshot), logger: logger)
        } catch {
            logger.critical("automatic certificates cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        // The manager in force: a changed acme section replaces it while serving.
        let certificateManager = Current(firstManager)
        // One replaced by a change, until it has stopped: it still answers its orders' challenges.
        let retiringManager = Current<CertificateManager>(nil)
        let automatic = firstManager != nil
        let development = certificates.development
        let challengeResolver: TLSServer.ChallengeResolver = { name in
            certificateManager.value?.tlsALPNChallenge(for: name) ?? retiringManager.value?.tlsALPNChallenge(for: name)
        }
        let http01Resolver: HTTP01Resolver = { host, token in
            certificateManager.value?.http01Answer(host: host, token: token)
                ?? retiringManager.value?.http01Answer(host: host, token: token)
        }
        let tls: TLSServer
        do {
            // A site's own pair, else its automatic certificate, else its development leaf, else the default.
            // TLS-ALPN-01 answers (RFC 8737) come from the manager's in-memory challenge book.
            tls = try TLSServer(
                defaultCertificate: certificates.defaultSource, minimumVersion: settings.tlsMinimumVersion,
                challengeResolver: automatic ? challengeResolver : nil
            ) { name in
                Self.certificate(for: name, snapshot: store.snapshot(), automatic: certificateManager.value, development: development)
            }
        } catch {
            logger.critical("the default certificate cannot be used", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }

        // Addresses were checked with the settings.
        let httpsAddresses = try settings.https.map { try SocketAddress(parsing: $0) }
        let httpAddresses = try settings.http.map { try SocketAddress(parsing: $0) }
        let adminAddress = try settings.admin.map { try SocketAddress(parsing: $0) }
        let fetches = FetchLog()
        let traffic = TrafficCounters()
        let acme: @Sendable () -> CertificateManager? = { certificateManager.value }
        let cdnWatch: Current<CDNWatch>
        do {
            cdnWatch = Current(try Self.cdnWatch(settings.cdnWatch, store: store, logger: logger))
        } catch {
            logger.critical("the CDN watch cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        let pages = AdminPages(
            sites: sites, ready: ready, fetches: fetches,
            metrics: MetricsExporter(
                traffic: traffic, fetches: fetches, sites: sites, acme: acme, development: development, cdn: { cdnWatch.value }),
            acme: acme, cdn: { cdnWatch.value })
        let adminHosts = AdminHosts(settings.adminHosts)
        let endpoint = AdminEndpoint(hosts: adminHosts) { path in pages.answer(path) }
        var serverConfiguration = Server.Configuration(
            https: httpsAddresses, http: httpAddresses, threads: workerCount, limits: limits, admin: adminAddress,
            adminEndpoint: endpoint, fetchLog: fetches, traffic: traffic, accessLog: accessLog,
            http01Resolver: automatic ? http01Resolver : nil,
            httpsRedirect: settings.httpRedirect ? HTTPSRedirect(port: settings.httpsPort) : nil)
        serverConfiguration.inherited = passed.inherited
        serverConfiguration.adopted = passed.adopted
        let server = Server(configuration: serverConfiguration, store: store, tls: tls, logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        if let user = settings.user {
            do {
                // The storage the manager made as root must be writable after the drop.
                if let manager = certificateManager.value { try Privileges.giveOwnership(of: manager.storage.directories, to: user) }
                // Full reloads rewrite the verdicts there by rename, which needs the directory's
                // ownership; without it only the next start is slower (logged by the registry).
                // Through a descriptor opened without following a symlink: root never changes
                // the owner of whatever a link planted at that path points to.
                try? Privileges.giveOwnership(ofDirectory: cacheDirectory, to: user)
                // The state directory and the development CA: what a process an upgrade starts
                // (as the user) reads again. Without it this process serves on, but an upgrade
                // would fail; say so rather than refuse to start.
                do {
                    try Privileges.giveOwnership(ofState: settings.state, to: user)
                } catch {
                    logger.warning(
                        "the state directory is not handed to \(user); an upgrade (SIGUSR2) may not be able to read it",
                        metadata: ["error": "\(error)"])
                }
                try Privileges.drop(to: user)
                logger.info("running as \(user)")
            } catch {
                logger.critical("cannot run as \(user)", metadata: ["error": "\(error)"])
                server.stop()
                throw ExitCode(1)
            }
        }
        certificateManager.value?.start()
        cdnWatch.value?.start()
        let served = store.snapshot().sites.count
        let follower = SettingsFollower(
            inForce: settings, logger: logger,
            read: { self.settings(environment: ProcessInfo.processInfo.environment) },
            apply: { [tuner = server.tuner] change in
                try Self.apply(
                    change, server: tuner, sites: sites, adminHosts: adminHosts, certificateManager: certificateManager,
                    retiringManager: retiringManager,
                    cdnWatch: cdnWatch, store: store,
                    names: { acmeNames.names(in: store.snapshot()) }, workers: workerCount, logger: logger)
            })
        // What follows every reload, whichever started it (the watcher, or SIGHUP without one):
        // `directories` are the sites it read, nil for all.
        let serveReloaded: @Sendable (Snapshot, [String]?) -> Void = { snapshot, directories in
            Self.followDefaultCertificate(snapshot, tls: tls, fallback: certificates.defaultSource, logger: logger)
            store.publish(snapshot)
            certificateManager.value?.want(acmeNames.names(in: snapshot))
            if let development, !automatic {
                Self.noteUnpermitted(snapshot, directories: directories, development: development, logger: logger)
            }
        }
        watcher?.start { change in
            // Served files are prepared again when cache-control changed: a full reload.
            let prepareAgain = (change.settings || change.full) && follower.follow()
            let full = change.full || prepareAgain
            guard full || change.defaultCertificate || !change.sites.isEmpty else { return }
            let snapshot = sites.reload { registry in
                if full {
                    registry.reloadAll()
                } else {
                    if change.defaultCertificate { registry.reloadDefaultCertificate() }
                    registry.reload(change.sites)
                }
                return registry.snapshot
            }
            serveReloaded(snapshot, full ? nil : Array(change.sites))
            if change.full { SystemdNotify.send("READY=1") }
        }
        logger.info(
            "serving",
            metadata: [
                "sites": "\(served)", "https": "\(server.boundHTTPS.map(\.description).joined(separator: ","))",
                "http": "\(server.boundHTTP.map(\.description).joined(separator: ","))", "threads": "\(workerCount)",
                "httpRedirect": "\(server.httpsRedirectPort.map { "https port \($0)" } ?? "off")",
            ])
        if let authority = certificates.developmentAuthority,
            let host = store.snapshot().sites.values.lazy.flatMap(\.hosts).first(where: { !$0.isWildcard }),
            let address = server.boundHTTPS.first
        {
            emit("Development certificate in use. Try:")
            emit("  curl --cacert \(authority) https://\(host.name):\(address.port)/.well-known/apple-app-site-association")
        }
        // One line a supervisor or a test can wait for (never a sleep).
        ready.raise()
        emit(
            "aasad ready: https=\(server.boundHTTPS.map(\.description).joined(separator: ",")) http=\(server.boundHTTP.map(\.description).joined(separator: ",")) admin=\(server.boundAdmin?.description ?? "off")"
        )
        if let path = settings.pidFile {
            do {
                try PIDFile.write(path)
            } catch {
                logger.critical("cannot write the PID file", metadata: ["path": "\(path)", "error": "\(error)"])
                upgrade.abandon()
                server.stop()
                throw ExitCode(1)
            }
        }
        if let upgradeReadiness {
            // The process being upgraded tells systemd (MAINPID) once it has read this: a main
            // process is the only one whose notifications NotifyAccess=main accepts.
            Upgrade.announceReady(upgradeReadiness)
        } else {
            SystemdNotify.send("READY=1\nSTATUS=serving \(served) sites\nMAINPID=\(getpid())")
        }

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                SystemdNotify.send("RELOADING=1")
                do {
                    try server.tuner.current.accessLog?.reopen()
                } catch {
                    logger.error("\(error)")
                }
                if let watcher {
                    watcher.requestFullRescan()
                } else {
                    _ = follower.follow()
                    serveReloaded(sites.reload { $0.reloadAll() }, nil)
                    SystemdNotify.send("READY=1")
                }
                logger.info("reload requested (SIGHUP)")
                continue
            }
            if received == SIGUSR2 {
                upgrade.begin(listeners: server.passableListeners()) { pid in
                    SystemdNotify.send("MAINPID=\(pid)\nREADY=1\nSTATUS=upgraded: serving from pid \(pid)")
                    // The same stop as SIGTERM's, from the signal loop.
                    kill(getpid(), SIGTERM)
                }
                continue
            }
            // Read once: a hand-over that lands after this is refused by `abandon`.
            upgrade.abandon()
            let successor = upgrade.handedOverTo
            if let successor {
                logger.info("stopping: upgraded", metadata: ["newPID": "\(successor)"])
            } else {
                logger.info("stopping", metadata: ["signal": "\(received == SIGTERM ? "SIGTERM" : "SIGINT")"])
            }
            ready.lower()
            // After a hand-over systemd's service is the new process: this one says nothing more.
            if successor == nil { SystemdNotify.send("STOPPING=1") }
            // Unready first, still serving: a load balancer that follows /readyz stops sending
            // before accepting stops. A second SIGTERM or SIGINT cuts the delay short.
            let delay = follower.inForce.shutdownDelay
            if successor == nil && delay > 0 {
                logger.info("unready; serving \(delay) s more before accepting stops (timeouts.shutdown-delay)")
                let clock = MonotonicClock()
                let end = clock.milliseconds() + delay * 1000
                while clock.milliseconds() < end {
                    let left = end - clock.milliseconds()
                    var wait = timespec(tv_sec: Int(left / 1000), tv_nsec: Int(left % 1000) * 1_000_000)
                    let next = sigtimedwait(&signals, nil, &wait)
                    if next == SIGTERM || next == SIGINT { break }
                }
            }
            watcher?.stop()
            server.stop()
            certificateManager.value?.stop()
            cdnWatch.value?.stop()
            if let path = settings.pidFile { PIDFile.remove(path) }
            return
        }
    }
}

/// Writes a line to standard output at once (not through stdio's buffer), for whoever waits for it.
private func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes a line to standard error at once.
private func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
