import Glibc
public import Logging
public import Reactor
public import SiteStore
public import TLS

/// The HTTPS (and optional plain HTTP) server: one worker thread per core by default, each with
/// its own epoll loop and its own SO_REUSEPORT listener per address (or, for sockets passed by
/// socket activation, one listener every worker waits on with EPOLLEXCLUSIVE); connections never
/// move between workers (DESIGN.md "Shape of the server").
public final class Server {
    public struct Configuration: Sendable {
        public var https: [SocketAddress]
        public var http: [SocketAddress]
        public var threads: Int
        public var limits: Limits
        /// The admin listener (plain HTTP, its own thread); nil for none.
        public var admin: SocketAddress?
        public var adminEndpoint: AdminEndpoint?
        /// Where fetches by Apple's CDN are noted; nil to not note them.
        public var fetchLog: FetchLog?
        /// Where the workers count requests, handshakes and connections.
        public var traffic: TrafficCounters
        /// Where requests are logged; nil for no access log.
        public var accessLog: AccessLog?
        /// Answers ACME's HTTP-01 challenges on the plain listeners (`HTTP01`); nil (the default):
        /// `/.well-known/acme-challenge/` is `404` like any other unknown path. TLS-ALPN-01 is
        /// answered by the `TLSServer` (its `challengeResolver`).
        public var http01Resolver: HTTP01Resolver?
        /// Makes the plain listeners redirect every request (but HTTP-01's) to HTTPS; nil (the
        /// default): they serve the sites as HTTPS does, for local testing.
        public var httpsRedirect: HTTPSRedirect?
        /// Listening sockets passed by socket activation (`SocketActivation`), named `https`,
        /// `http` or `admin`: a kind with any replaces the addresses of that kind, and every
        /// worker accepts on them.
        public var inherited: [SocketActivation.Listener] = []

        public init(
            https: [SocketAddress], http: [SocketAddress], threads: Int, limits: Limits = Limits(), admin: SocketAddress? = nil,
            adminEndpoint: AdminEndpoint? = nil, fetchLog: FetchLog? = nil, traffic: TrafficCounters = TrafficCounters(),
            accessLog: AccessLog? = nil, http01Resolver: HTTP01Resolver? = nil, httpsRedirect: HTTPSRedirect? = nil
        ) {
            self.httpsRedirect = httpsRedirect
            self.http01Resolver = http01Resolver
            self.accessLog = accessLog
            self.traffic = traffic
            self.fetchLog = fetchLog
            self.https = https
            self.http = http
            self.threads = threads
            self.limits = limits
            self.admin = admin
            self.adminEndpoint = adminEndpoint
        }
    }

    private let configuration: Configuration
    private let store: SnapshotStore
    private let tls: TLSServer?
    private let logger: Logger
    private let stopFlag = AtomicFlag()
    private var workers: [Worker] = []
    private var threads: [LoopThread] = []
    private var listenerFDs: [Int32] = []
    /// The passed listeners are closed once, by the first stop.
    private var inheritedClosed = false

    /// The addresses actually bound (port 0 resolved), HTTPS then HTTP, in configuration order.
    public private(set) var boundHTTPS: [SocketAddress] = []
    public private(set) var boundHTTP: [SocketAddress] = []
    public private(set) var boundAdmin: SocketAddress?
    /// The port plain HTTP's redirects name, once started; nil when they are off.
    public private(set) var httpsRedirectPort: UInt16?

    public init(configuration: Configuration, store: SnapshotStore, tls: TLSServer?, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.tls = tls
        self.logger = logger
    }

    /// Binds every listener and starts the workers. Throws (and binds nothing) when an address
    /// cannot be bound.
    ///
    /// Sets SIGPIPE to be ignored for the whole process: OpenSSL writes to the sockets itself, and
    /// a peer that resets while a TLS record is being written must cost one connection, never the
    /// process that embeds the server.
    public func start() throws(SystemError) {
        signal(SIGPIPE, SIG_IGN)
        let count = max(1, configuration.threads)
        var perWorker = Array(repeating: [Worker.Listener](), count: count)
        let inherited = { (name: String) in self.configuration.inherited.filter { $0.name == name } }
        do throws(SystemError) {
            for (name, isTLS) in [("https", true), ("http", false)] {
                for passed in inherited(name) {
                    let address = try Socket.localAddress(passed.fd)
                    for i in 0..<count {
                        perWorker[i].append(Worker.Listener(fd: passed.fd, kind: isTLS ? .https : .http, shared: true))
                    }
                    if isTLS { boundHTTPS.append(address) } else { boundHTTP.append(address) }
                }
            }
            for (addresses, isTLS) in [(configuration.https, true), (configuration.http, false)]
            where inherited(isTLS ? "https" : "http").isEmpty {
                for address in addresses {
                    var resolved = address
                    for i in 0..<count {
                        let fd = try Socket.listen(on: resolved, reusePort: true)
                        listenerFDs.append(fd)
                        if i == 0 { resolved = try Socket.localAddress(fd) }
                        perWorker[i].append(Worker.Listener(fd: fd, kind: isTLS ? .https : .http))
                    }
                    if isTLS { boundHTTPS.append(resolved) } else { boundHTTP.append(resolved) }
                }
            }
            // The port as bound: `--https 127.0.0.1:0` redirects to the port the kernel picked.
            httpsRedirectPort = configuration.httpsRedirect.map { $0.port ?? boundHTTPS.first?.port ?? 443 }
            let redirect = httpsRedirectPort.map(HTTPSRedirect.Prepared.init(port:))
            for i in 0..<count {
                workers.append(
                    try Worker(
                        index: i, listeners: perWorker[i], tls: tls, store: store, limits: configuration.limits, logger: logger,
                        stopFlag: stopFlag, counters: configuration.traffic.makeWorkerCounters(),
                        fetchLog: configuration.fetchLog, accessLog: configuration.accessLog, http01: configuration.http01Resolver,
                        httpsRedirect: redirect))
            }
            let passedAdmin = inherited("admin").first
            if let endpoint = configuration.adminEndpoint, passedAdmin != nil || configuration.admin != nil {
                // Serving matters more than the admin port: a busy admin address is an error in
                // the log, not a reason to stop.
                do throws(SystemError) {
                    var fd = passedAdmin?.fd ?? -1
                    if passedAdmin == nil, let address = configuration.admin {
                        fd = try Socket.listen(on: address, reusePort: false)
                        listenerFDs.append(fd)
                    }
                    boundAdmin = try Socket.localAddress(fd)
                    workers.append(
                        try Worker(
                            index: count, listeners: [Worker.Listener(fd: fd, kind: .admin, shared: passedAdmin != nil)], tls: nil,
                            store: store,
                            limits: configuration.limits, logger: logger, stopFlag: stopFlag,
                            counters: WorkerCounters(),
                            admin: endpoint))
                } catch {
                    logger.error("cannot open the admin listener; serving without it", metadata: ["error": "\(error)"])
                }
            }
        } catch {
            listenerFDs.forEach(Socket.close)
            listenerFDs = []
            workers = []
            boundHTTPS = []
            boundHTTP = []
            boundAdmin = nil
            throw error
        }
        for worker in workers {
            threads.append(LoopThread.spawn { worker.run() })
        }
    }

    /// Asks every worker to stop and waits for them.
    /// Stops gracefully: workers stop accepting, close their listeners, let open connections
    /// finish (at most `Limits.drainTimeout`), then end. Returns when all have ended.
    public func stop() {
        stopFlag.raise()
        for worker in workers { worker.loop.wake() }
        wait()
        // The workers closed their own listeners while draining; the passed ones close here,
        // once (the manager that passed them keeps its copy open for the next process).
        for passed in configuration.inherited where !inheritedClosed { Socket.close(passed.fd) }
        inheritedClosed = true
        listenerFDs = []
    }

    /// Waits until every worker has stopped.
    public func wait() {
        for thread in threads { thread.join() }
        threads = []
    }
}
