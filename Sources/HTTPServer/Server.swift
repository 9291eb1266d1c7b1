import Glibc
import HTTPCore
public import Logging
public import Reactor
public import Served
import Synchronization
public import TLS

/// The HTTPS (and optional plain HTTP) server: one worker thread per core by default, each with
/// its own epoll loop and its own SO_REUSEPORT listener per address (or, for sockets passed by
/// socket activation, one listener every worker waits on with EPOLLEXCLUSIVE); connections never
/// move between workers (docs/architecture.md).
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
        /// Answers the tenant API's ownership check (`OwnershipCheckPath`) on every listener but
        /// the admin one; nil (the default): that path is like any other.
        public var ownershipAnswer: OwnershipAnswerResolver?
        /// Makes the plain listeners redirect every request (but HTTP-01's) to HTTPS; nil (the
        /// default): they serve the sites as HTTPS does, for local testing.
        public var httpsRedirect: HTTPSRedirect?
        /// Listening sockets passed by socket activation (`SocketActivation`), named `https`,
        /// `http` or `admin`: a kind with any replaces the addresses of that kind, and every
        /// worker accepts on them.
        public var inherited: [SocketActivation.Listener] = []
        /// Listening sockets the process before an in-place upgrade bound from its configuration
        /// and passed on (named `aasad-https`, `aasad-http`, `aasad-admin`; see
        /// `passableListeners`). Each configured address takes over the ones bound to it (port 0
        /// takes any port on its host), with the connections already queued on them; ones no
        /// configured address takes are closed, and addresses none was bound to are bound anew.
        public var adopted: [SocketActivation.Listener] = []

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
    private let tuning: Tuning
    private let store: SnapshotStore
    private let tls: TLSServer?
    private let logger: Logger
    private let stopFlag = AtomicFlag()
    /// What the serving workers' incomplete requests hold together (`Limits.incompleteRequestBytes`).
    private let requestBudget: RequestBudget
    private var workers: [Worker] = []
    private var threads: [LoopThread] = []
    private var listenerFDs: [Int32] = []
    /// The listeners this process bound or adopted, by kind: what an upgrade passes on.
    private var ownListeners: [(kind: String, fd: Int32)] = []
    /// Adopted listeners every worker shares (closed once, by the first stop).
    private var sharedAdopted: [Int32] = []
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
        tuning = Tuning(limits: configuration.limits, accessLog: configuration.accessLog)
        requestBudget = RequestBudget(limit: configuration.limits.incompleteRequestBytes)
        configuration.traffic.watch(requestBudget)
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
        var adoptable = try Self.adoptable(configuration.adopted)
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
                let kind = isTLS ? "https" : "http"
                for address in addresses {
                    if let group = Self.take(address, kind: kind, from: &adoptable) {
                        // One socket per worker when the counts agree (each worker its own, as
                        // when bound here); else every worker waits on all of them.
                        for (j, fd) in group.fds.enumerated() {
                            ownListeners.append((kind, fd))
                            if group.fds.count == count {
                                listenerFDs.append(fd)
                                perWorker[j].append(Worker.Listener(fd: fd, kind: isTLS ? .https : .http))
                            } else {
                                sharedAdopted.append(fd)
                                for i in 0..<count {
                                    perWorker[i].append(Worker.Listener(fd: fd, kind: isTLS ? .https : .http, shared: true))
                                }
                            }
                        }
                        if isTLS { boundHTTPS.append(group.address) } else { boundHTTP.append(group.address) }
                        continue
                    }
                    var resolved = address
                    for i in 0..<count {
                        let fd = try Socket.listen(on: resolved, reusePort: true)
                        listenerFDs.append(fd)
                        ownListeners.append((kind, fd))
                        if i == 0 { resolved = try Socket.localAddress(fd) }
                        perWorker[i].append(Worker.Listener(fd: fd, kind: isTLS ? .https : .http))
                    }
                    if isTLS { boundHTTPS.append(resolved) } else { boundHTTP.append(resolved) }
                }
            }
            // The port as bound: `--https 127.0.0.1:0` redirects to the port the kernel picked.
            httpsRedirectPort = configuration.httpsRedirect.map { $0.port ?? boundHTTPS.first?.port ?? 443 }
            let redirect = httpsRedirectPort.map(HTTPSRedirect.Prepared.init(port:))
            let holders = HolderBoard()
            for i in 0..<count {
                workers.append(
                    try Worker(
                        index: i, listeners: perWorker[i], tls: tls, store: store, limits: configuration.limits, logger: logger,
                        stopFlag: stopFlag, tuning: tuning, counters: configuration.traffic.makeWorkerCounters(),
                        fetchLog: configuration.fetchLog, accessLog: configuration.accessLog, http01: configuration.http01Resolver,
                        httpsRedirect: redirect, budget: requestBudget, holders: holders, ownershipAnswer: configuration.ownershipAnswer))
            }
            let passedAdmin = inherited("admin").first
            if let endpoint = configuration.adminEndpoint, passedAdmin != nil || configuration.admin != nil {
                // Serving matters more than the admin port: a busy admin address is an error in
                // the log, not a reason to stop.
                do throws(SystemError) {
                    var fd = passedAdmin?.fd ?? -1
                    var shared = passedAdmin != nil
                    if passedAdmin == nil, let address = configuration.admin {
                        if let group = Self.take(address, kind: "admin", from: &adoptable), let first = group.fds.first {
                            fd = first
                            // The admin worker accepts on the first; others (none from aasad) close.
                            for extra in group.fds.dropFirst() { Socket.close(extra) }
                            sharedAdopted.append(fd)
                            shared = true
                        } else {
                            fd = try Socket.listen(on: address, reusePort: false)
                            listenerFDs.append(fd)
                        }
                        ownListeners.append(("admin", fd))
                    }
                    boundAdmin = try Socket.localAddress(fd)
                    workers.append(
                        try Worker(
                            index: count, listeners: [Worker.Listener(fd: fd, kind: .admin, shared: shared)], tls: nil,
                            store: store,
                            limits: configuration.limits, logger: logger, stopFlag: stopFlag, tuning: tuning,
                            counters: WorkerCounters(),
                            admin: endpoint))
                } catch {
                    logger.error("cannot open the admin listener; serving without it", metadata: ["error": "\(error)"])
                }
            }
        } catch {
            listenerFDs.forEach(Socket.close)
            listenerFDs = []
            ownListeners = []
            workers = []
            boundHTTPS = []
            boundHTTP = []
            boundAdmin = nil
            throw error
        }
        // What the configuration no longer names: closed (their queued connections are reset,
        // as when a restart drops an address).
        for group in adoptable {
            logger.notice("a listener passed by the upgrade is no longer configured; closed", metadata: ["address": "\(group.address)"])
            group.fds.forEach(Socket.close)
        }
        for worker in workers {
            threads.append(LoopThread.spawn { worker.run() })
        }
    }

    /// Every listener this process accepts on, named for `SocketActivation.spawn`: passed
    /// ones under their own names (the manager's sockets stay what they were), the ones it
    /// bound or adopted as `aasad-https`, `aasad-http` or `aasad-admin` (for `adopted`).
    public func passableListeners() -> [SocketActivation.Listener] {
        configuration.inherited + ownListeners.map { SocketActivation.Listener(name: "aasad-" + $0.kind, fd: $0.fd) }
    }

    /// Adopted sockets grouped by kind and bound address.
    private static func adoptable(_ adopted: [SocketActivation.Listener]) throws(SystemError) -> [AdoptedGroup] {
        var groups: [AdoptedGroup] = []
        for listener in adopted {
            guard listener.name.hasPrefix("aasad-") else { continue }
            let kind = String(listener.name.dropFirst("aasad-".count))
            let address = try Socket.localAddress(listener.fd)
            if let i = groups.firstIndex(where: { $0.kind == kind && $0.address == address }) {
                groups[i].fds.append(listener.fd)
            } else {
                groups.append(AdoptedGroup(kind: kind, address: address, fds: [listener.fd]))
            }
        }
        return groups
    }

    /// The group a configured address takes: the same address, or for port 0 any port on the
    /// same host.
    private static func take(_ address: SocketAddress, kind: String, from groups: inout [AdoptedGroup]) -> AdoptedGroup? {
        let index =
            groups.firstIndex { $0.kind == kind && $0.address == address }
            ?? groups.firstIndex { $0.kind == kind && address.port == 0 && $0.address.family == address.family }
        guard let index else { return nil }
        return groups.remove(at: index)
    }

    private struct AdoptedGroup {
        var kind: String
        var address: SocketAddress
        var fds: [Int32]
    }

    /// What changes the limits and the access log while serving (`Tuner.tune`), from any thread.
    public var tuner: Tuner { Tuner(tuning: tuning) }

    /// New limits and access log for a running server (a changed aasad.yaml): each worker
    /// takes them at its next tick (within a second); every connection's next deadline is set
    /// from them, a deadline already running is kept. The old access log is written out and
    /// closed once no worker holds it.
    public struct Tuner: Sendable {
        let tuning: Tuning

        /// The limits and access log in force.
        public var current: (limits: Limits, accessLog: AccessLog?) {
            let (_, limits, accessLog) = tuning.current()
            return (limits, accessLog)
        }

        /// Workers look at least once a second (their loops wake that often).
        public func tune(limits: Limits, accessLog: AccessLog?) {
            tuning.publish(limits: limits, accessLog: accessLog)
        }

        /// Whether every worker has taken the limits and access log last published: what a
        /// caller (a test) waits on instead of sleeping past the workers' next tick.
        public var takenByEveryWorker: Bool { tuning.takenByEveryWorker }
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
        if !inheritedClosed {
            for passed in configuration.inherited { Socket.close(passed.fd) }
            sharedAdopted.forEach(Socket.close)
        }
        inheritedClosed = true
        listenerFDs = []
    }

    /// Waits until every worker has stopped.
    public func wait() {
        for thread in threads { thread.join() }
        threads = []
    }
}

/// The limits and access log in force, as `Server.Tuner.tune` last set them; workers compare the
/// version once a tick and take the rest only when it moved.
final class Tuning: Sendable {
    private let state: Mutex<(limits: Limits, accessLog: AccessLog?)>
    private let published = Atomic<UInt64>(0)
    /// The version each worker last took, by the slot `join` gave it.
    private let taken = Mutex<[UInt64]>([])

    init(limits: Limits, accessLog: AccessLog?) {
        state = Mutex((limits, accessLog))
    }

    var version: UInt64 { published.load(ordering: .acquiring) }

    func publish(limits: Limits, accessLog: AccessLog?) {
        state.withLock {
            $0 = (limits, accessLog)
            published.add(1, ordering: .releasing)
        }
    }

    func current() -> (version: UInt64, limits: Limits, accessLog: AccessLog?) {
        state.withLock { (published.load(ordering: .acquiring), $0.limits, $0.accessLog) }
    }

    /// A new worker's slot, holding the version it starts with.
    func join(version: UInt64) -> Int {
        taken.withLock {
            $0.append(version)
            return $0.count - 1
        }
    }

    /// A worker has taken `version`.
    func took(_ version: UInt64, slot: Int) {
        taken.withLock { $0[slot] = version }
    }

    var takenByEveryWorker: Bool {
        let version = self.version
        return taken.withLock { $0.allSatisfy { $0 >= version } }
    }
}
