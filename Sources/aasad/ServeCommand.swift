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
            SIGHUP reloads the config directory; SIGTERM and SIGINT stop.
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

    private var workerCount: Int { threads ?? max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    @Option(help: "Where the development certificate is kept.")
    var state: String = ProcessInfo.processInfo.environment["AASAD_STATE"] ?? "state"

    @Option(help: "Cache-Control of served files.")
    var cacheControl: String = ServingOptions.defaultCacheControl

    @Option(help: "Seconds a TLS handshake may take.")
    var handshakeTimeout: Int64 = Limits().handshakeTimeout

    @Option(help: "Seconds a request head may take once begun.")
    var requestTimeout: Int64 = Limits().requestTimeout

    @Option(help: "Seconds an idle keep-alive connection is kept.")
    var idleTimeout: Int64 = Limits().idleTimeout

    @Option(help: "On SIGTERM/SIGINT, seconds open connections get to finish.")
    var drainTimeout: Int64 = Limits().drainTimeout

    @Option(help: "The admin listener (plain HTTP: /healthz, /readyz, /sites), or off.")
    var admin: String = "127.0.0.1:9190"

    @Option(help: "Seconds between full rescans of the config directory, for filesystems where inotify is silent (default: none).")
    var rescanInterval: Int64?

    @Flag(inversion: .prefixedNo, help: "Follow the config directory with inotify and apply changes as they happen.")
    var watch = true

    @Option(help: "Log level.")
    var logLevel: LogLevel = .info

    @Option(help: "Log format: text (one line per event) or json (one object per line).")
    var logFormat: OutputFormat = .text

    func validate() throws {
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1.") }
        if min(handshakeTimeout, requestTimeout, idleTimeout, drainTimeout) < 1 {
            throw ValidationError("Timeouts are whole seconds, at least 1.")
        }
        if let rescanInterval, rescanInterval < 1 { throw ValidationError("--rescan-interval is whole seconds, at least 1.") }
        for address in https + http + (admin == "off" ? [] : [admin]) {
            do {
                _ = try SocketAddress(parsing: address)
            } catch {
                throw ValidationError("Cannot listen on \(error.description).")
            }
        }
    }

    func run() throws {
        let level = logLevel.level
        let json = logFormat == .json
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
        // OpenSSL writes to sockets itself: a peer that went away must not kill the process.
        signal(SIGPIPE, SIG_IGN)
        // Signals are taken by sigwait on this thread only; workers inherit the blocked mask.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let registry = SiteRegistry(
            root: config, options: ServingOptions(cacheControl: cacheControl), logger: logger, checkCertificate: ConfigLoading.check)
        registry.reloadAll()
        let store = SnapshotStore(registry.snapshot)
        let sites = LockedRegistry(registry)
        let ready = ReadyFlag()
        let certificates = try Self.certificates(snapshot: registry.snapshot, state: state, logger: logger)
        let tls: TLSServer
        do {
            tls = try TLSServer(defaultCertificate: certificates.defaultSource) { name in
                store.snapshot().site(forHost: name)?.certificate?.source
            }
        } catch {
            logger.critical("the default certificate cannot be used", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }

        var limits = Limits()
        limits.handshakeTimeout = handshakeTimeout
        limits.requestTimeout = requestTimeout
        limits.idleTimeout = idleTimeout
        limits.drainTimeout = drainTimeout
        let httpsAddresses = try (https.isEmpty ? [":8443"] : https).map { try SocketAddress(parsing: $0) }
        let httpAddresses = try http.map { try SocketAddress(parsing: $0) }
        let adminAddress = admin == "off" ? nil : try SocketAddress(parsing: admin)
        let fetches = FetchLog()
        let traffic = TrafficCounters()
        let pages = AdminPages(
            sites: sites, ready: ready, fetches: fetches, metrics: MetricsExporter(traffic: traffic, fetches: fetches, sites: sites))
        let endpoint = AdminEndpoint { path in pages.answer(path) }
        let server = Server(
            configuration: .init(
                https: httpsAddresses, http: httpAddresses, threads: workerCount, limits: limits, admin: adminAddress,
                adminEndpoint: endpoint, fetchLog: fetches, traffic: traffic),
            store: store, tls: tls, logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        let served = store.snapshot().sites.count
        var watcher: ConfigWatcher?
        if watch {
            do {
                watcher = try ConfigWatcher(root: config, rescanInterval: rescanInterval, logger: logger) { change in
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
        ready.set(true)
        emit(
            "aasad ready: https=\(server.boundHTTPS.map(\.description).joined(separator: ",")) http=\(server.boundHTTP.map(\.description).joined(separator: ",")) admin=\(server.boundAdmin?.description ?? "off")"
        )
        SystemdNotify.send("READY=1\nSTATUS=serving \(served) sites\nMAINPID=\(getpid())")

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                SystemdNotify.send("RELOADING=1")
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
            ready.set(false)
            SystemdNotify.send("STOPPING=1")
            watcher?.stop()
            server.stop()
            return
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
        if uncovered.count < sites.count {
            logger.warning(
                "sites without a certificate are served with a development certificate", metadata: ["sites": "\(uncovered.count)"])
        }
        do {
            let issued = try DevelopmentCertificate.issue(directory: state + "/dev-tls", hosts: uncovered.flatMap(\.hosts).map(\.name))
            let files = CertificateFiles(directory: state + "/dev-tls", chainPEM: issued.chainPEM, keyPEM: issued.keyPEM)
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
