package import ACME
package import Check
package import Foundation
package import HTTPServer
package import Logging
package import Reactor
package import SiteStore
package import Synchronization
package import TLS
import TenantAPI

/// Reloads served since start, shared with the closures that serve them.
private final class ReloadCount: Sendable {
    let value = Atomic<Int>(0)
}

/// A start that failed. Its reason was logged (critical) where it was found; the owner exits.
package struct StartFailure: Error {}

/// The daemon: the server, the site registry and its watcher, certificates (the configured pairs,
/// automatic ones, the development CA), the CDN watch, the admin pages and metrics, composed from
/// one `ServerSettings`, and the settings followed while serving (`SettingsFollower`).
///
/// `aasad serve` makes one, starts it and waits for signals (`runUntilSignalled`); a test makes
/// one on loopback port 0 and calls the same methods. `start` and `stop` are called by the owner
/// from one thread; `reload`, `apply(settings:)` and the read accessors from any.
package final class Daemon: @unchecked Sendable {
    // @unchecked: `running` is written once by `start` before any other method reads it (the
    // owner's thread), and only read afterwards: `stop` marks `stopped` rather than clearing it,
    // so a reader on another thread never meets a write. Every part it holds is itself Sendable
    // or touched only from the owner's thread (`server`'s start and stop).
    /// The version `--version` and `aasad_build_info` report.
    package static let version = "0.1.0"

    package let configDirectory: String
    private let initial: ServerSettings
    let logger: Logger
    private let upgradeReadiness: Int32?
    /// The environment as the process started (before `Upgrade.takeReadiness` removed its
    /// variable, which the ticket keys' descriptor is found after).
    private let environment: [String: String]
    private let output: @Sendable (String) -> Void
    private let reread: @Sendable () -> (ServerSettings, [ServerSettings.Problem], unknown: [String])
    private let reloads = ReloadCount()
    var running: Running?
    /// Set by the first `stop`; `reload`, `apply(settings:)`, `upgrade` and `stop` do nothing after.
    let stopped = Atomic<Bool>(false)
    /// The late certificate checks (Daemon+LateChecks.swift) while they run: a stop waits for them.
    let lateChecks = DispatchGroup()
    /// Whether the late certificate checks are running (tests: none after `stop` returns).
    package var checkingCertificatesLate: Bool { lateChecks.wait(timeout: .now()) == .timedOut }

    /// The parts while serving: nil before `start` and after `stop`.
    var serving: Running? { stopped.load(ordering: .acquiring) ? nil : running }

    /// The parts made by `start`.
    struct Running {
        let server: Server
        let store: SnapshotStore
        let sites: LockedRegistry
        let watcher: ConfigWatcher?
        let follower: SettingsFollower
        let upgrade: Upgrade
        let ready: AtomicFlag
        let certificateManager: Current<CertificateManager>
        let cdnWatch: Current<CDNWatch>
        let serveReloaded: @Sendable (Snapshot, [String]?) -> Void
        let workers: Int
        /// The tenant API's listener and tokens, when `api.listen` is set.
        var api: (listener: APIListener, tokens: APITokenStore)? = nil
        /// The ownership checker of names added over the API, when there are checks.
        var verification: VerificationChecker? = nil
        /// Which names automatic certificates are for (the ownership check's gate among them).
        var acmeNames = ACMENames()
        /// The status page's index queue.
        var statusPages: StatusPages? = nil
        /// Where `/sites` is rendered.
        var sitesRender: PageRender? = nil
    }

    /// - Parameters:
    ///   - settings: the settings to start with, already checked (`ServerSettings.Problem`s none).
    ///   - upgradeReadiness: the pipe a process being upgraded waits on (`Upgrade.takeReadiness`).
    ///   - environment: the environment that pipe was taken from.
    ///   - output: where the lines a supervisor or a test waits for go ("aasad ready: …").
    ///   - reread: the settings read again when aasad.yaml changes or on `reload`; by default the
    ///     config directory's aasad.yaml alone (a command adds its variables and flags).
    package init(
        configDirectory: String, settings: ServerSettings, logger: Logger, upgradeReadiness: Int32? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        output: @escaping @Sendable (String) -> Void = Daemon.standardOutput,
        reread: (@Sendable () -> (ServerSettings, [ServerSettings.Problem], unknown: [String]))? = nil
    ) {
        self.configDirectory = configDirectory
        initial = settings
        self.logger = logger
        self.upgradeReadiness = upgradeReadiness
        self.environment = environment
        self.output = output
        self.reread =
            reread ?? {
                var (settings, problems) = ServerSettings.load(configDirectory: configDirectory)
                if problems.isEmpty { problems += settings.consistencyProblems(source: "settings") }
                return (settings, problems, [])
            }
    }

    /// Writes a line to standard output at once (not through stdio's buffer), for whoever waits for it.
    package static let standardOutput: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // MARK: - State

    /// The HTTPS addresses as bound (port 0 resolved); empty before `start`.
    package var boundHTTPS: [SocketAddress] { running?.server.boundHTTPS ?? [] }
    package var boundHTTP: [SocketAddress] { running?.server.boundHTTP ?? [] }
    package var boundAdmin: SocketAddress? { running?.server.boundAdmin }
    /// What is served now.
    package var snapshot: Snapshot? { running?.store.snapshot() }
    /// The settings in force: as started, with the changes applied live since (after `stop`,
    /// those in force when it stopped).
    package var settings: ServerSettings { running?.follower.inForce ?? initial }
    /// Reloads served since start (each site change, SIGHUP or settings change that published a
    /// snapshot): a test waits for it to move rather than sleeping.
    package var reloadGeneration: Int { reloads.value.load(ordering: .acquiring) }
    /// Whether every worker has taken the limits and access log last applied (they look once a
    /// second): a test waits for it rather than sleeping past the workers' next tick.
    package var limitsTakenByEveryWorker: Bool { running?.server.tuner.takenByEveryWorker ?? false }
    /// What the admin pages show, as of the last reload.
    package var adminView: AdminView? { running?.sites.current }
    /// The status page's index queue (tests hold a build there).
    package var statusPages: StatusPages? { running?.statusPages }
    package var sitesRender: PageRender? { running?.sitesRender }

    // MARK: - Start

    /// Blocks the signals `runUntilSignalled` takes on the calling thread; threads started after
    /// (the workers) inherit the mask, so only `sigwait` sees them. Call before `start`.
    package static func blockSignals() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGUSR2] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        return signals
    }

    /// Binds, loads every site, starts serving, and returns once ready (the "aasad ready" line
    /// written). Throws `StartFailure` (the reason logged) when any part cannot be made.
    package func start() throws {
        precondition(running == nil, "a daemon starts once")
        let settings = initial
        // Settings built in code are held to the bounds the file's text is.
        let problems = settings.valueProblems(source: "settings") + settings.consistencyProblems(source: "settings")
        guard problems.isEmpty else {
            for problem in problems { logger.critical("\(problem)") }
            throw StartFailure()
        }
        let config = configDirectory
        let logger = logger
        let json = settings.logFormat == .json
        // Passed sockets first (sd_listen_fds(3): early, before other descriptors are opened and
        // threads started): they are made close-on-exec and the variables removed.
        let passed = try Self.passedListeners(adminEnabled: settings.admin != nil, logger: logger)
        let upgrade = Upgrade(pidFile: settings.pidFile, logger: logger)
        // The replaced process's ticket keys (only in a process an upgrade started): its
        // clients resume here.
        Upgrade.takeTicketKeys(environment: environment, upgrading: upgradeReadiness != nil, logger: logger)
        let workerCount = settings.threads ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let limits = Self.descriptorLimits(settings, workers: workerCount, logger: logger)
        let accessLog: AccessLog?
        do {
            accessLog = try settings.accessLog.map { try AccessLog(destination: $0, format: json ? .json : .text) }
        } catch {
            logger.critical("\(error)")
            throw StartFailure()
        }
        // OpenSSL writes to sockets itself: a peer that went away must not kill the process.
        signal(SIGPIPE, SIG_IGN)

        // Verdicts of the contents validated before, so that a restart validates only what
        // changed (a start at 100,000 sites would otherwise parse every file again); without a
        // directory for them, every start validates everything.
        let cacheDirectory = settings.state + "/cache"
        do {
            try Privileges.refuseLinks(inState: settings.state, ["cache", "dev-tls"] + (settings.acme.storage == nil ? ["acme"] : []))
        } catch {
            logger.critical("cannot use the state directory", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        try? FileManager.default.createDirectory(
            atPath: cacheDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Watched before it is read: what changes while the first load runs (seconds at 100,000
        // sites) is in the watcher's first batch. The site directories are watched on a thread
        // of their own while the verdicts load and the first load lists and orders `sites/`;
        // the load reads no site before they are all watched (`beforeReading`).
        var watcher: ConfigWatcher?
        if settings.watch {
            do {
                watcher = try ConfigWatcher(
                    root: config, rescanInterval: settings.rescanInterval, logger: logger, sitesInBackground: true, tlsByLoad: true)
            } catch {
                logger.warning("cannot watch the config directory; changes apply on SIGHUP only", metadata: ["error": "\(error)"])
            }
        }
        let knownValidFile = KnownValid.binaryIdentity().map { (path: cacheDirectory + "/validated-contents", identity: $0) }
        let registry = SiteRegistry(
            root: config, options: ServingOptions(cacheControl: settings.cacheControl), logger: logger,
            checkCertificate: ConfigLoading.check, knownValidFile: knownValidFile,
            servedFirstFile: ConfigLoading.servedFirstFile(state: settings.state))
        // The first load takes the certificate pairs it has no verdict for unchecked; a few are
        // checked before the server is ready (so that a small config starts exactly as checked),
        // many after (`checkCertificatesLate`; both in Daemon+LateChecks.swift).
        registry.defersCertificateChecks = true
        registry.beforeReading = watcher.map { watcher in { watcher.waitForSites() } }
        // The sites' tls/ folders are watched by the load, each before its pair is read.
        if let watcher { registry.watchesTLS = { @Sendable name in watcher.watchTLS(ofSite: name) } }
        registry.reloadAll(remembers: false)
        registry.beforeReading = nil
        registry.watchesTLS = nil
        registry.defersCertificateChecks = false
        let (checksLate, defaultPair, failedEarly) = Self.checkFirstLoadPairs(registry, logger: logger)
        let store = SnapshotStore(registry.snapshot)
        let certificates = try Self.certificates(
            snapshot: registry.snapshot, state: settings.state, automatic: settings.acme.directory != nil,
            isUnchecked: { checksLate && registry.isUnchecked($0) }, isRefused: registry.isRefused,
            defaultPair: defaultPair, failedEarly: failedEarly, logger: logger)
        // The first admin view (a look at every site) and the record of the first load's verdicts
        // (a walk over every site and a rewrite of the state file) are made on this thread once
        // the server is ready, when `start` returns (or throws): together 0.4 to 0.6 s at 100,000
        // sites that no HTTPS client waits for (docs/benchmarks.md). Until the view is built,
        // whatever reads it or changes the registry waits (`LockedRegistry`): an admin page other
        // than the probes asked meanwhile holds the admin worker until then, and every failure
        // after the server started builds it before stopping the server (which joins that worker).
        let firstView = DeferredWork()
        let sites = LockedRegistry(
            registry, fallback: certificates.developmentAuthority != nil ? .development : .otherSite, builds: firstView.hold)
        // The first load's verdicts are recorded for the next start after readiness, on this
        // thread (the late checks, if any, record theirs again when they end).
        defer {
            firstView.run()
            sites.withRegistry { $0.rememberVerdicts() }
            // The view and the walk free what they made after the trim before readiness.
            Memory.trim()
        }
        let ready = AtomicFlag()
        let verification: VerificationStore?
        do {
            verification = try Self.verificationStore(settings.api, config: config)
        } catch {
            logger.critical("the ownership checks of the tenant API cannot be kept", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        var blocked: (@Sendable (String) -> Bool)? = nil
        if let verification { blocked = { name in verification.blocks(name) } }
        // Children of per-name wildcard sites, asked about on threads of their own (Daemon+Children.swift).
        let children: ChildApprovals?
        do {
            children = try Self.childApprovals(settings: settings, config: config, logger: logger)
        } catch {
            logger.critical("wildcard children cannot be asked about", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        let acmeNames = ACMENames(blocked: blocked, wildcardCertificates: settings.acme.wildcardCertificates, children: children)
        if let children { Self.adoptStoredChildren(children, names: acmeNames, snapshot: registry.snapshot, logger: logger) }
        // Stored certificates load before the listeners accept anything: with SO_REUSEPORT a
        // restarting replica gets clients (Apple's CDN among them) from its first accept.
        let firstManager: CertificateManager?
        do {
            firstManager = try Self.certificateManager(settings: settings, names: acmeNames.names(in: registry.snapshot), logger: logger)
        } catch {
            logger.critical("automatic certificates cannot start", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        // A start that fails from here on stops the manager it made: its replica record
        // (`ReplicaPresence`) would make every other replica's orders wait the whole pause.
        var managerStarted = false
        defer { if !managerStarted { firstManager?.stop() } }
        // The manager in force: a changed acme section replaces it while serving.
        let certificateManager = Current(firstManager)
        // The wanted names, computed from the newest snapshot and handed over under one lock
        // (Daemon+Children.swift): an asker's or a check's call never undoes a reload's with an
        // older snapshot.
        let wantNames = Self.wantNames(manager: { certificateManager.value }, names: acmeNames, snapshot: { store.snapshot() })
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
                Self.certificate(
                    for: name, snapshot: store.snapshot(), automatic: certificateManager.value, development: development, names: acmeNames)
            }
        } catch {
            logger.critical("the default certificate cannot be used", metadata: ["error": "\(error)"])
            throw StartFailure()
        }

        // Addresses were checked with the settings; a caller that skipped the check is told.
        let httpsAddresses: [SocketAddress]
        let httpAddresses: [SocketAddress]
        let adminAddress: SocketAddress?
        do {
            httpsAddresses = try settings.https.map { try SocketAddress(parsing: $0) }
            httpAddresses = try settings.http.map { try SocketAddress(parsing: $0) }
            adminAddress = try settings.admin.map { try SocketAddress(parsing: $0) }
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        // A fetch by Apple's CDN means the app is out and its users wait on this site's file.
        let fetches = FetchLog(appleFetched: { host in certificateManager.value?.demand(host) })
        let traffic = TrafficCounters()
        let acme: @Sendable () -> CertificateManager? = { certificateManager.value }
        let cdnWatch: Current<CDNWatch>
        do {
            cdnWatch = Current(try Self.cdnWatch(settings.cdnWatch, store: store, logger: logger))
        } catch {
            logger.critical("the CDN watch cannot start", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        let pages = AdminPages(
            sites: sites, ready: ready, fetches: fetches,
            metrics: MetricsExporter(
                traffic: traffic, fetches: fetches, sites: sites, acme: acme, development: development, cdn: { cdnWatch.value },
                served: { store.snapshot() }, children: children),
            acme: acme, cdn: { cdnWatch.value }, verification: verification, children: children)
        let adminHosts = AdminHosts(settings.adminHosts)
        let endpoint = AdminEndpoint(hosts: adminHosts, replies: { target in pages.reply(target) })
        var serverConfiguration = Server.Configuration(
            https: httpsAddresses, http: httpAddresses, threads: workerCount, limits: limits, admin: adminAddress,
            adminEndpoint: endpoint, fetchLog: fetches, traffic: traffic, accessLog: accessLog,
            http01Resolver: automatic ? http01Resolver : nil,
            httpsRedirect: settings.httpRedirect ? HTTPSRedirect(port: settings.httpsPort) : nil)
        if let verification {
            serverConfiguration.ownershipAnswer = { host, token in verification.answer(host: host, token: token) }
        }
        serverConfiguration.inherited = passed.inherited
        serverConfiguration.adopted = passed.adopted
        let server = Server(configuration: serverConfiguration, store: store, tls: tls, logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
        // The tenant API (docs/api.md) on its own listener, over the served state just published:
        // bound, and its key read, before privileges are dropped, as the server's are.
        // Names verified join the certificate manager's wanted names at once.
        let checker = Current<VerificationChecker>(
            verification.map { records in
                VerificationChecker(
                    store: records,
                    configuration: .init(port: settings.api.verifyPort, allowsPrivateAddresses: settings.api.verifyPrivateAddresses),
                    logger: logger
                ) { name in
                    wantNames()
                    // The tenant API made this name (the check exists for names it creates),
                    // and its owner is waiting for it: it goes ahead of names nobody asked for.
                    certificateManager.value?.demand(name)
                }
            })
        let api: (listener: APIListener, tokens: APITokenStore)?
        do {
            api = try Self.tenantAPI(
                settings.api, config: config, store: store, sites: sites, automatic: automatic,
                certificateStatus: { certificateManager.value?.status(of: $0) }, logger: logger,
                verification: verification, verificationDue: { checker.value?.poke() })
        } catch {
            logger.critical("the tenant API cannot listen", metadata: ["error": "\(error)"])
            // An admin page asked since the server started waits for the first view, and the
            // stop joins the admin worker: the view is built first (here and below).
            firstView.run()
            server.stop()
            throw StartFailure()
        }
        if let user = settings.user {
            do {
                try Self.dropPrivileges(
                    to: user, state: settings.state, cacheDirectory: cacheDirectory, manager: certificateManager.value, logger: logger)
                // Only what this process made: a store that only reads owns nothing.
                if let verification, verification.creates {
                    try Privileges.giveOwnership(
                        of: [verification.directory, verification.directory + "/names", verification.directory + "/key"], to: user)
                }
            } catch {
                logger.critical("cannot run as \(user)", metadata: ["error": "\(error)"])
                api?.listener.stop()
                firstView.run()
                server.stop()
                throw StartFailure()
            }
        }
        certificateManager.value?.start()
        managerStarted = true
        // A child approved becomes a wanted name at once, and is demanded: it is ordered ahead of
        // names nobody asked for.
        children?.onChange { added in
            wantNames()
            for name in added { certificateManager.value?.demand(name) }
        }
        children?.start()
        cdnWatch.value?.start()
        checker.value?.start()
        api?.listener.start()
        let served = store.snapshot().sites.count
        let follower = SettingsFollower(
            inForce: settings, logger: logger, read: reread,
            apply: { [tuner = server.tuner] change in
                try Self.apply(
                    change, server: tuner, sites: sites, adminHosts: adminHosts, certificateManager: certificateManager,
                    retiringManager: retiringManager,
                    cdnWatch: cdnWatch, store: store,
                    names: { acmeNames.names(in: store.snapshot()) }, workers: workerCount, logger: logger)
            })
        // What follows every reload, whichever started it (the watcher, SIGHUP without one, a
        // settings change): `directories` are the sites it read, nil for all.
        let serveReloaded: @Sendable (Snapshot, [String]?) -> Void = { [reloads] snapshot, directories in
            verification?.learnRecords(of: snapshot, directories: directories)
            Self.followDefaultCertificate(snapshot, tls: tls, fallback: certificates.defaultSource, logger: logger)
            store.publish(snapshot)
            wantNames()
            if let development, !automatic {
                Self.noteUnpermitted(snapshot, directories: directories, development: development, logger: logger)
            }
            reloads.value.add(1, ordering: .releasing)
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
        running = Running(
            server: server, store: store, sites: sites, watcher: watcher, follower: follower, upgrade: upgrade, ready: ready,
            certificateManager: certificateManager, cdnWatch: cdnWatch, serveReloaded: serveReloaded, workers: workerCount, api: api,
            verification: checker.value, acmeNames: acmeNames, statusPages: pages.status,
            sitesRender: pages.sitesRender)
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
            output("Development certificate in use. Try:")
            output("  curl --cacert \(authority) https://\(host.name):\(address.port)/.well-known/apple-app-site-association")
        }
        if checksLate { checkCertificatesLate(sites, logger: logger, serveReloaded: serveReloaded) }
        // The load trimmed the heap as it ended, but tables of every site freed since (blocks
        // of hundreds of kilobytes to megabytes, which glibc takes from the heap once its mapping
        // threshold has risen past them) stayed in it: 46 MB at 100,000 sites
        // (docs/benchmarks.md, "Memory a start holds").
        Memory.trim()
        // One line a supervisor or a test can wait for (never a sleep).
        ready.raise()
        output(
            "aasad ready: https=\(server.boundHTTPS.map(\.description).joined(separator: ",")) http=\(server.boundHTTP.map(\.description).joined(separator: ",")) admin=\(server.boundAdmin?.description ?? "off") api=\(Self.apiBound(settings.api.listen, port: api?.listener.port))"
        )
        if let path = settings.pidFile {
            do {
                try PIDFile.write(path)
            } catch {
                logger.critical("cannot write the PID file", metadata: ["path": "\(path)", "error": "\(error)"])
                upgrade.abandon()
                // What started is stopped, not left to the process's exit: a daemon in a test
                // process (or any owner that goes on) would keep a watcher and a manager running.
                stopped.store(true, ordering: .releasing)
                api?.listener.stop()
                checker.value?.stop()
                watcher?.stop()
                // Before the stop joins the admin worker, which may wait for the view; the late
                // checks wait for it too.
                firstView.run()
                server.stop()
                children?.stop()
                certificateManager.value?.stop()
                cdnWatch.value?.stop()
                lateChecks.wait()
                throw StartFailure()
            }
        }
        if let upgradeReadiness {
            // The process being upgraded tells systemd (MAINPID) once it has read this: a main
            // process is the only one whose notifications NotifyAccess=main accepts.
            Upgrade.announceReady(upgradeReadiness)
        } else {
            SystemdNotify.send("READY=1\nSTATUS=serving \(served) sites\nMAINPID=\(getpid())")
        }
    }

    /// Hands what the process made as root to `user` and becomes it.
    private static func dropPrivileges(
        to user: String, state: String, cacheDirectory: String, manager: CertificateManager?, logger: Logger
    ) throws {
        // The storage the manager made as root must be writable after the drop.
        if let manager { try Privileges.giveOwnership(of: manager.storage.directories, to: user) }
        // Full reloads rewrite the verdicts there by rename, which needs the directory's
        // ownership; without it only the next start is slower (logged by the registry).
        // Through a descriptor opened without following a symlink: root never changes
        // the owner of whatever a link planted at that path points to.
        try? Privileges.giveOwnership(ofDirectory: cacheDirectory, to: user)
        // The state directory and the development CA: what a process an upgrade starts
        // (as the user) reads again. Without it this process serves on, but an upgrade
        // would fail; say so rather than refuse to start.
        do {
            try Privileges.giveOwnership(ofState: state, to: user)
        } catch {
            logger.warning(
                "the state directory is not handed to \(user); an upgrade (SIGUSR2) may not be able to read it",
                metadata: ["error": "\(error)"])
        }
        try Privileges.drop(to: user)
        logger.info("running as \(user)")
    }
}
