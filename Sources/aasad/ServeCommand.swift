import ArgumentParser
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
            SIGHUP reloads the config directory (and reopens the access log); SIGTERM and SIGINT \
            stop after open connections finish. Settings come from the config directory's \
            aasad.yaml, then AASAD_* environment variables (AASAD_TIMEOUTS_IDLE for timeouts.idle), \
            then these flags, each overriding the one before.
            """
    )

    @Option(help: "The config directory (environment: AASAD_CONFIG).")
    var config: String = ProcessInfo.processInfo.environment["AASAD_CONFIG"] ?? "config"

    @Option(help: "An HTTPS address to listen on, e.g. :443 or 127.0.0.1:8443 (repeatable; default :8443).")
    var https: [String] = []

    @Option(help: "A plain HTTP address to listen on, for local testing (repeatable; default none).")
    var http: [String] = []

    @Option(help: "Worker threads, each with its own event loop (default: one per core).")
    var threads: Int?

    @Option(help: "Where the development certificate is kept (default: state).")
    var state: String?

    @Option(help: "After binding, run as this user (and its group): start as root to bind 443.")
    var user: String?

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

    /// The settings in force: aasad.yaml, then AASAD_* variables, then these flags. Also the file's
    /// own settings, to tell later whether the file changed.
    func settings(
        environment: [String: String]
    ) -> (ServerSettings, [ServerSettings.Problem], unknown: [String], file: ServerSettings) {
        var (settings, problems) = ServerSettings.load(configDirectory: config)
        let file = settings
        let fromEnvironment = settings.apply(environment: environment)
        problems += fromEnvironment.problems
        func flag(_ name: String, _ key: String, _ values: [String]?) {
            guard let values, !values.isEmpty else { return }
            if let problem = settings.apply(flag: name, key: key, values) { problems.append(problem) }
        }
        flag("--https", "listen.https", https)
        flag("--http", "listen.http", http)
        flag("--threads", "threads", threads.map { ["\($0)"] })
        flag("--state", "state", state.map { [$0] })
        flag("--user", "user", user.map { [$0] })
        flag("--cache-control", "cache-control", cacheControl.map { [$0] })
        flag("--handshake-timeout", "timeouts.handshake", handshakeTimeout.map { ["\($0)"] })
        flag("--request-timeout", "timeouts.request", requestTimeout.map { ["\($0)"] })
        flag("--idle-timeout", "timeouts.idle", idleTimeout.map { ["\($0)"] })
        flag("--write-timeout", "timeouts.write", writeTimeout.map { ["\($0)"] })
        flag("--drain-timeout", "timeouts.drain", drainTimeout.map { ["\($0)"] })
        flag("--max-connections", "limits.max-connections", maxConnections.map { ["\($0)"] })
        flag("--tls-min-version", "tls.min-version", tlsMinVersion.map { [$0] })
        flag("--admin", "admin", admin.map { [$0] })
        flag("--rescan-interval", "watch.rescan-interval", rescanInterval.map { ["\($0)"] })
        flag("--watch", "watch.enabled", watch.map { ["\($0)"] })
        flag("--log-level", "logging.level", logLevel.map { [$0.rawValue] })
        flag("--log-format", "logging.format", logFormat.map { [$0.rawValue] })
        flag("--access-log", "logging.access-log", accessLog.map { [$0] })
        return (settings, problems, fromEnvironment.unknown, file)
    }

    func run() throws {
        let (settings, problems, unknownVariables, fileSettings) = settings(environment: ProcessInfo.processInfo.environment)
        if let problem = problems.first(where: { $0.source == "flag" }) {
            throw ValidationError("\(problem.key): \(problem.message).")
        }
        guard problems.isEmpty else {
            for problem in problems { printError("error: \(problem)") }
            printError("aasad: the settings are not valid; nothing was started (check them with: aasad validate \(config))")
            throw ExitCode(1)
        }
        let level = settings.logLevel.level
        let json = settings.logFormat == .json
        LoggingSystem.bootstrap { label in
            if json {
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "aasad")
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
        for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let registry = SiteRegistry(
            root: config, options: ServingOptions(cacheControl: settings.cacheControl), logger: logger,
            checkCertificate: ConfigLoading.check)
        registry.reloadAll()
        let store = SnapshotStore(registry.snapshot)
        let certificates = try Self.certificates(snapshot: registry.snapshot, state: settings.state, logger: logger)
        let sites = LockedRegistry(registry, fallback: certificates.developmentAuthority != nil ? .development : .otherSite)
        let ready = AtomicFlag()
        let tls: TLSServer
        do {
            tls = try TLSServer(defaultCertificate: certificates.defaultSource, minimumVersion: settings.tlsMinimumVersion) { name in
                store.snapshot().site(forHost: name)?.certificate?.source
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
        let pages = AdminPages(
            sites: sites, ready: ready, fetches: fetches, metrics: MetricsExporter(traffic: traffic, fetches: fetches, sites: sites))
        let endpoint = AdminEndpoint { path in pages.answer(path) }
        let server = Server(
            configuration: .init(
                https: httpsAddresses, http: httpAddresses, threads: workerCount, limits: limits, admin: adminAddress,
                adminEndpoint: endpoint, fetchLog: fetches, traffic: traffic, accessLog: accessLog),
            store: store, tls: tls, logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        if let user = settings.user {
            do {
                try Privileges.drop(to: user)
                logger.info("running as \(user)")
            } catch {
                logger.critical("cannot run as \(user)", metadata: ["error": "\(error)"])
                server.stop()
                throw ExitCode(1)
            }
        }
        let served = store.snapshot().sites.count
        var watcher: ConfigWatcher?
        if settings.watch {
            do {
                watcher = try ConfigWatcher(root: config, rescanInterval: settings.rescanInterval, logger: logger) { change in
                    if change.settings || change.full { Self.noticeSettingsChange(config: config, atStart: fileSettings, logger: logger) }
                    guard change.full || change.defaultCertificate || !change.sites.isEmpty else { return }
                    let snapshot = sites.reload { registry in
                        if change.full {
                            registry.reloadAll()
                        } else {
                            if change.defaultCertificate { registry.reloadDefaultCertificate() }
                            registry.reload(change.sites)
                        }
                        return registry.snapshot
                    }
                    Self.followDefaultCertificate(snapshot, tls: tls, fallback: certificates.defaultSource, logger: logger)
                    store.publish(snapshot)
                    if change.full { SystemdNotify.send("READY=1") }
                }
                watcher?.start()
            } catch {
                logger.warning("cannot watch the config directory; changes apply on SIGHUP only", metadata: ["error": "\(error)"])
            }
        }
        logger.info(
            "serving",
            metadata: [
                "sites": "\(served)", "https": "\(server.boundHTTPS.map(\.description).joined(separator: ","))",
                "http": "\(server.boundHTTP.map(\.description).joined(separator: ","))", "threads": "\(workerCount)",
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
        SystemdNotify.send("READY=1\nSTATUS=serving \(served) sites\nMAINPID=\(getpid())")

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                SystemdNotify.send("RELOADING=1")
                do {
                    try accessLog?.reopen()
                } catch {
                    logger.error("\(error)")
                }
                if let watcher {
                    watcher.requestFullRescan()
                } else {
                    let snapshot = sites.reload { $0.reloadAll() }
                    Self.followDefaultCertificate(snapshot, tls: tls, fallback: certificates.defaultSource, logger: logger)
                    store.publish(snapshot)
                    SystemdNotify.send("READY=1")
                }
                logger.info("reload requested (SIGHUP)")
                continue
            }
            logger.info("stopping", metadata: ["signal": "\(received == SIGTERM ? "SIGTERM" : "SIGINT")"])
            ready.lower()
            SystemdNotify.send("STOPPING=1")
            watcher?.stop()
            server.stop()
            return
        }
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

    /// aasad.yaml is read at start: a change on disk is checked and reported, and applies at the
    /// next start (listeners and threads cannot change under a running server).
    static func noticeSettingsChange(config: String, atStart: ServerSettings, logger: Logger) {
        // The file alone, compared with the file alone at start: the environment and flags
        // apply on top of both the same way.
        let (onDisk, problems) = ServerSettings.load(configDirectory: config)
        for problem in problems { logger.error("\(problem); the next start would refuse it") }
        if problems.isEmpty && onDisk != atStart {
            logger.warning("\(ServerSettings.fileName) changed; restart aasad to apply it (settings are read at start)")
        }
    }

    /// Keeps the TLS default in step with the config directory's `tls/`: a new pair becomes the
    /// default for new connections; without one, the start-up default (development or first site).
    static func followDefaultCertificate(_ snapshot: Snapshot, tls: TLSServer, fallback: TLSServer.CertificateSource, logger: Logger) {
        let wanted = snapshot.defaultCertificate?.source ?? fallback
        guard wanted.identity != tls.defaultContext.identity else { return }
        do {
            try tls.replaceDefault(wanted)
            logger.info("default certificate replaced", metadata: ["from": "\(wanted.label)"])
        } catch {
            logger.error("the new default certificate cannot be used; keeping the previous one", metadata: ["error": "\(error)"])
        }
    }

    /// Hosts the development-certificate warning names; the rest are counted (a log line stays
    /// readable at 100,000 sites).
    static let hostsNamedInWarning = 10

    struct Certificates {
        var defaultSource: TLSServer.CertificateSource
        /// The CA to trust, when the development certificate is in use.
        var developmentAuthority: String?
    }

    /// The default certificate: the configured one; else, when some site has no certificate of its
    /// own, a development certificate for those sites; else the first site's own.
    static func certificates(snapshot: Snapshot, state: String, logger: Logger) throws -> Certificates {
        if let files = snapshot.defaultCertificate {
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        let sites = snapshot.sites.values.sorted { $0.directory < $1.directory }
        let uncovered = sites.filter { $0.certificate == nil }
        if uncovered.isEmpty, let files = sites.compactMap(\.certificate).first {
            logger.notice(
                "no default certificate (config/tls/); connections without SNI get the first site's",
                metadata: ["site": "\(files.directory)"])
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        let hosts = uncovered.flatMap(\.hosts).map(\.name)
        do {
            let issued = try DevelopmentCertificate.issue(directory: state + "/dev-tls", hosts: hosts)
            let files = CertificateFiles(directory: state + "/dev-tls", chainPEM: issued.chainPEM, keyPEM: issued.keyPEM)
            // Loud, once per start: no client trusts this certificate unless told to, and Apple's
            // CDN never will, so a production server must not run on it unnoticed.
            let shown = hosts.sorted().prefix(Self.hostsNamedInWarning).joined(separator: " ")
            let more = hosts.count > Self.hostsNamedInWarning ? " (and \(hosts.count - Self.hostsNamedInWarning) more)" : ""
            let message =
                "\(hosts.count) host\(hosts.count == 1 ? " is" : "s are") served with the DEVELOPMENT certificate, which no client trusts "
                + "unless told to (curl --cacert \(issued.authorityPath)) and Apple's CDN never will: \(shown)\(more). "
                + "Give each site a real certificate in sites/<host>/tls/cert.pem and key.pem, or a default pair covering them in tls/"
            logger.warning(
                "\(message)",
                metadata: [
                    "certificate": "development", "sites": "\(uncovered.count)", "ca": "\(issued.authorityPath)",
                    "caPermits": "\(issued.permittedNames.joined(separator: ","))",
                    "caExpires": "\(ConfigLoading.date(issued.authorityNotAfter))",
                    "leafExpires": "\(ConfigLoading.date(issued.leafNotAfter))",
                ])
            if issued.authorityCreated {
                logger.notice(
                    "made a new development CA; clients that trusted an earlier one must trust this one",
                    metadata: ["ca": "\(issued.authorityPath)", "caPermits": "\(issued.permittedNames.joined(separator: ","))"])
            }
            return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath)
        } catch {
            logger.critical("cannot make a development certificate", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
    }

}

/// Writes a line to standard output at once (not through stdio's buffer), for whoever waits for it.
private func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// `--log-level` values.
enum LogLevel: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}

extension CertificateFiles {
    /// The same files as the TLS layer takes them.
    var source: TLSServer.CertificateSource {
        TLSServer.CertificateSource(identity: identity, chainPEM: chainPEM, keyPEM: keyPEM, label: directory)
    }
}

/// Writes a line to standard error at once.
private func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
