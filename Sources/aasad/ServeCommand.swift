import ArgumentParser
import Foundation
import HTTPServer
import Logging
import Reactor
import SiteStore
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

    @Option(help: "Log level.")
    var logLevel: LogLevel = .info

    func validate() throws {
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1.") }
        if min(handshakeTimeout, requestTimeout, idleTimeout) < 1 { throw ValidationError("Timeouts are whole seconds, at least 1.") }
        for address in https + http {
            do {
                _ = try SocketAddress(parsing: address)
            } catch {
                throw ValidationError("Cannot listen on \(error.description).")
            }
        }
    }

    func run() throws {
        let level = logLevel.level
        LoggingSystem.bootstrap { label in
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

        var generation: UInt64 = 1
        let options = ServingOptions(cacheControl: cacheControl)
        let scan = ConfigLoading.load(config)
        Self.report(scan, logger: logger)
        let store = SnapshotStore(Snapshot.build(from: scan, generation: generation, options: options))

        let certificates = try Self.certificates(scan: scan, state: state, logger: logger)
        let tls: TLSServer
        do {
            tls = try TLSServer(defaultCertificate: certificates.defaultSource) { name in
                guard let files = store.snapshot().site(forHost: name)?.certificate else { return nil }
                return TLSServer.CertificateSource(
                    identity: files.identity, chainPEM: files.chainPEM, keyPEM: files.keyPEM, label: files.directory)
            }
        } catch {
            logger.critical("the default certificate cannot be used", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }

        var limits = Limits()
        limits.handshakeTimeout = handshakeTimeout
        limits.requestTimeout = requestTimeout
        limits.idleTimeout = idleTimeout
        let httpsAddresses = try (https.isEmpty ? [":8443"] : https).map { try SocketAddress(parsing: $0) }
        let httpAddresses = try http.map { try SocketAddress(parsing: $0) }
        let server = Server(
            configuration: .init(https: httpsAddresses, http: httpAddresses, threads: workerCount, limits: limits), store: store, tls: tls,
            logger: logger)
        do {
            try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        let served = store.snapshot().sites.count
        logger.info(
            "serving",
            metadata: [
                "sites": "\(served)", "https": "\(server.boundHTTPS.map(\.description).joined(separator: ","))",
                "http": "\(server.boundHTTP.map(\.description).joined(separator: ","))", "threads": "\(workerCount)",
            ])
        if let authority = certificates.developmentAuthority,
            let host = store.snapshot().sites.lazy.flatMap(\.hosts).first(where: { !$0.isWildcard }),
            let address = server.boundHTTPS.first
        {
            emit("Development certificate in use. Try:")
            emit("  curl --cacert \(authority) https://\(host.name):\(address.port)/.well-known/apple-app-site-association")
        }
        // One line a supervisor or a test can wait for (never a sleep).
        emit(
            "aasad ready: https=\(server.boundHTTPS.map(\.description).joined(separator: ",")) http=\(server.boundHTTP.map(\.description).joined(separator: ","))"
        )

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                generation += 1
                let rescan = ConfigLoading.load(config)
                Self.report(rescan, logger: logger)
                store.publish(Snapshot.build(from: rescan, generation: generation, options: options))
                logger.info("reloaded", metadata: ["sites": "\(store.snapshot().sites.count)", "generation": "\(generation)"])
                continue
            }
            logger.info("stopping", metadata: ["signal": "\(received == SIGTERM ? "SIGTERM" : "SIGINT")"])
            server.stop()
            return
        }
    }

    struct Certificates {
        var defaultSource: TLSServer.CertificateSource
        /// The CA to trust, when the development certificate is in use.
        var developmentAuthority: String?
    }

    /// The default certificate: the configured one; else, when some site has no certificate of its
    /// own, a development certificate for those sites; else the first site's own.
    static func certificates(scan: ConfigScan, state: String, logger: Logger) throws -> Certificates {
        if let files = scan.defaultCertificate, scan.problems.allSatisfy({ $0.severity != .error || !$0.file.hasPrefix("tls") }) {
            return Certificates(
                defaultSource: .init(identity: files.identity, chainPEM: files.chainPEM, keyPEM: files.keyPEM, label: files.directory),
                developmentAuthority: nil)
        }
        let valid = scan.sites.filter(\.isValid)
        let uncovered = valid.filter { $0.certificate == nil }
        if uncovered.isEmpty, let files = valid.compactMap(\.certificate).first {
            logger.notice(
                "no default certificate (config/tls/); connections without SNI get the first site's",
                metadata: ["site": "\(files.directory)"])
            return Certificates(
                defaultSource: .init(identity: files.identity, chainPEM: files.chainPEM, keyPEM: files.keyPEM, label: files.directory),
                developmentAuthority: nil)
        }
        let hosts = uncovered.flatMap(\.hosts).map(\.name)
        if !valid.isEmpty && uncovered.count < valid.count || scan.defaultCertificate != nil {
            logger.warning(
                "sites without a certificate are served with a development certificate", metadata: ["sites": "\(uncovered.count)"])
        }
        do {
            let issued = try DevelopmentCertificate.issue(directory: state + "/dev-tls", hosts: hosts)
            let identity = CertificateFiles(directory: "dev-tls", chainPEM: issued.chainPEM, keyPEM: issued.keyPEM).identity
            return Certificates(
                defaultSource: .init(identity: identity, chainPEM: issued.chainPEM, keyPEM: issued.keyPEM, label: state + "/dev-tls"),
                developmentAuthority: issued.authorityPath)
        } catch {
            logger.critical("cannot make a development certificate", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
    }

    /// Logs what is not served and why: one line per finding, never silent.
    static func report(_ scan: ConfigScan, logger: Logger) {
        for problem in scan.problems {
            logger.log(level: problem.severity == .error ? .error : .warning, "\(problem.file): \(problem.message)")
        }
        for site in scan.sites {
            for problem in site.problems {
                logger.log(level: problem.severity == .error ? .error : .warning, "\(problem.file): \(problem.message)")
            }
            for file in [
                site.aasa.map { ($0.relativePath, $0.result.diagnostics) },
                site.assetLinks.map { ($0.relativePath, $0.result.diagnostics) },
            ] {
                guard let (path, diagnostics) = file else { continue }
                for d in diagnostics.errors { logger.error("\(path): \(d)") }
            }
            if !site.isValid { logger.error("not served: \(site.directory)") }
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
