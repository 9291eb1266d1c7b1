import CAASALinux
import Glibc
public import Logging
import Reactor
import SafeText
import Synchronization

/// The tenant API's own HTTP/1.1 listener (docs/api.md, "Transport and limits"): one thread per
/// connection, since a handler blocks (fsync, waiting until a written site is served), bounded in
/// number in total and per peer address. Plain HTTP on a loopback address only; anywhere else
/// TLS with the API's own certificate and key.
public final class APIListener: Sendable {
    /// The bound port (a listener made with port 0 has one of the system's choosing).
    public let port: Int
    private let listenFD: Int32
    private let tls: APITLS?
    private let limits: APIListenerLimits
    private let handler: APIHandler
    private let logger: Logger
    private let shared: Shared
    private let acceptThread = Mutex<LoopThreadBox?>(nil)

    /// Pending connections the kernel queues before `accept` (the same as nginx's default).
    static let backlog: Int32 = 511
    /// How long accepting pauses when the process is out of file descriptors: the listening socket
    /// stays readable, so accepting at once again would spin.
    static let acceptPause: Duration = .milliseconds(100)

    /// What the accept thread and every connection thread share; it outlives the listener while a
    /// connection that did not end within `stopTimeout` still runs.
    private final class Shared: Sendable {
        /// An eventfd that becomes readable, and stays so, when the listener stops: every poll()
        /// in the accept and connection threads watches it.
        let wake: Int32
        /// An eventfd each ending connection adds one to: what `stop()` waits on.
        let ended: Int32
        let stopping = Atomic<Bool>(false)
        let counts = Mutex(Counts())

        init(wake: Int32, ended: Int32) {
            self.wake = wake
            self.ended = ended
        }

        deinit {
            close(wake)
            close(ended)
        }
    }

    private struct Counts {
        var total = 0
        var perPeer: [String: Int] = [:]
        var refused = 0
        /// TLS refusals in progress (`refuseBusy`).
        var refusing = 0
    }

    /// Binds the address (so a bad address, a port in use, or a bad TLS pair fails here, at
    /// start) and loads the TLS pair; accepting begins with `start()`.
    public init(
        listen: String, tls files: APITLSFiles?, limits: APIListenerLimits = .init(), handler: @escaping APIHandler, logger: Logger
    ) throws(APIListenerError) {
        let address = try APIListenAddress(listen)
        if files == nil && !address.isLoopback { throw .tlsRequired(listen) }
        tls = try files.map { (f) throws(APIListenerError) -> APITLS in try APITLS(f) }
        // OpenSSL writes to the sockets itself, and a write to a peer that has gone would raise
        // SIGPIPE; the daemon ignores it too (Sources/Daemon/Daemon.swift).
        signal(SIGPIPE, SIG_IGN)
        (listenFD, port) = try Self.bind(address, listen)
        let wake = eventfd(0, CAASALinux_EFD_CLOEXEC)
        let ended = eventfd(0, CAASALinux_EFD_CLOEXEC | CAASALinux_EFD_NONBLOCK)
        guard wake >= 0, ended >= 0 else {
            let reason = describeErrno(errno)
            close(listenFD)
            if wake >= 0 { close(wake) }
            if ended >= 0 { close(ended) }
            throw .cannotListen(listen, reason: "cannot make an eventfd: \(reason)")
        }
        shared = Shared(wake: wake, ended: ended)
        self.limits = limits
        self.handler = handler
        self.logger = logger
    }

    /// A listener never started holds only its socket; a started one lives until `stop()` (its
    /// accept thread holds it).
    deinit {
        if !shared.stopping.load(ordering: .acquiring) { close(listenFD) }
    }

    /// Starts the accept thread (once).
    public func start() {
        acceptThread.withLock { thread in
            guard thread == nil, !shared.stopping.load(ordering: .acquiring) else { return }
            thread = LoopThreadBox(spawn: { self.acceptLoop() })
        }
    }

    /// Closes the listening socket, wakes every connection (each ends its wait at once and
    /// closes), and waits for the threads, at most `limits.stopTimeout` for the connections. A
    /// handler still running then is left to finish on its own: its connection ends after it.
    public func stop() {
        guard !shared.stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(shared.wake, &one, 8)
        let thread = acceptThread.withLock { $0 }
        thread?.join()
        close(listenFD)
        let deadline = ContinuousClock.now + limits.stopTimeout
        while shared.counts.withLock({ $0.total + $0.refusing }) > 0 {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                logger.warning("api: connections still open when the stop's wait ended", metadata: ["open": "\(openConnections)"])
                return
            }
            var fds = [pollfd(fd: shared.ended, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 1, APIStream.milliseconds(remaining)) > 0 {
                var count: UInt64 = 0
                _ = read(shared.ended, &count, 8)
            }
        }
    }

    /// Connections open now (for tests and logs).
    package var openConnections: Int { shared.counts.withLock { $0.total } }

    /// Connections refused so far at the total or per-peer bound (for tests).
    package var refusedConnections: Int { shared.counts.withLock { $0.refused } }

    // MARK: - Accepting

    private func acceptLoop() {
        while true {
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0), pollfd(fd: shared.wake, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, -1)
            if r < 0 && errno != EINTR { return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            let fd = CAASALinux_accept4(listenFD, CAASALinux_SOCK_NONBLOCK | CAASALinux_SOCK_CLOEXEC)
            guard fd >= 0 else {
                // A connection gone before it was accepted, or a signal: the next one. Anything
                // else (out of descriptors or memory) would make the readable socket spin: pause.
                let e = errno
                if e != EAGAIN && e != EINTR && e != ECONNABORTED {
                    logger.warning("api: accepting failed; accepting pauses", metadata: ["error": "\(describeErrno(e))"])
                    var wakeOnly = [pollfd(fd: shared.wake, events: Int16(POLLIN), revents: 0)]
                    _ = poll(&wakeOnly, 1, APIStream.milliseconds(Self.acceptPause))
                }
                continue
            }
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            // A peer already gone has no name; it is closed without a thread.
            guard named == 0 else {
                close(fd)
                continue
            }
            let peer = peerText(storage)
            let key = peerBoundKey(storage)
            guard admit(key) else {
                refuseBusy(fd, peer: peer)
                continue
            }
            let acceptedAt = ContinuousClock.now
            guard let stream = APIStream(fd: fd, wake: shared.wake, tls: tls) else {
                release(key)
                continue
            }
            let connection = APIConnection(
                stream: stream, peer: peer, limits: limits, handler: handler, logger: logger,
                isStopping: { [shared] in shared.stopping.load(ordering: .acquiring) })
            let started = spawnDetached { [self] in
                connection.run(acceptedAt: acceptedAt)
                release(key)
            }
            if !started {
                logger.warning("api: cannot start a connection thread; connection closed", metadata: ["peer": "\(peer)"])
                release(key)
            }
        }
    }

    /// Counts a new connection in, unless a bound is reached; `peer` is its `peerBoundKey`.
    private func admit(_ peer: String) -> Bool {
        shared.counts.withLock { counts in
            guard counts.total < limits.maximumConnections, counts.perPeer[peer, default: 0] < limits.maximumConnectionsPerPeer else {
                counts.refused += 1
                return false
            }
            counts.total += 1
            counts.perPeer[peer, default: 0] += 1
            return true
        }
    }

    /// Counts a connection out, and tells a waiting `stop()`.
    private func release(_ peer: String) {
        shared.counts.withLock { counts in
            counts.total -= 1
            let left = counts.perPeer[peer, default: 1] - 1
            counts.perPeer[peer] = left > 0 ? left : nil
        }
        var one: UInt64 = 1
        _ = write(shared.ended, &one, 8)
    }

    /// Past a bound: 503 busy and close. On plain HTTP without a thread: the answer is sent if the
    /// socket takes it at once (it always does on a new connection). Over TLS the answer needs a
    /// handshake, so it gets a short-lived thread of its own, at most `maximumTLSRefusals` at once
    /// and `tlsRefusalTimeout` each; past those the connection is closed unanswered.
    private func refuseBusy(_ fd: Int32, peer: String) {
        logger.debug("api: connection refused at the connection bound", metadata: ["peer": "\(peer)"])
        let answer = APIConnection.serialize(
            APIConnection.error(503, "busy", "Too many connections are open; try again shortly."), withBody: true, close: true)
        guard tls != nil else {
            _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            shutdown(fd, Int32(SHUT_WR))
            close(fd)
            return
        }
        let admitted = shared.counts.withLock { counts in
            guard counts.refusing < Self.maximumTLSRefusals else { return false }
            counts.refusing += 1
            return true
        }
        guard admitted else {
            close(fd)
            return
        }
        let shared = shared
        let ended: @Sendable () -> Void = {
            shared.counts.withLock { $0.refusing -= 1 }
            var one: UInt64 = 1
            _ = write(shared.ended, &one, 8)
        }
        guard let stream = APIStream(fd: fd, wake: shared.wake, tls: tls) else {
            ended()
            return
        }
        let deadline = ContinuousClock.now + Self.tlsRefusalTimeout
        let started = spawnDetached {
            if (try? stream.handshake(until: deadline)) != nil {
                try? stream.write(answer, until: deadline)
                stream.finish()
            }
            ended()
        }
        if !started { ended() }
    }

    /// TLS connections past a bound being answered 503 at once, each on a thread: past this many,
    /// a connection is closed unanswered (a flood of them must not become the thread flood the
    /// bounds exist to prevent).
    static let maximumTLSRefusals = 4
    /// How long a TLS refusal may take, handshake and answer together: a real client needs
    /// milliseconds; a slow one is not waited for.
    static let tlsRefusalTimeout: Duration = .seconds(2)

    // MARK: - Binding

    private static func bind(_ address: APIListenAddress, _ listen: String) throws(APIListenerError) -> (Int32, Int) {
        func fail(_ what: String, _ fd: Int32) -> APIListenerError {
            let reason = "\(what): \(describeErrno(errno))"
            if fd >= 0 { close(fd) }
            return .cannotListen(listen, reason: reason)
        }
        let family: Int32 =
            switch address.host {
            case .ipv4: AF_INET
            case .ipv6, .any: AF_INET6
            }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw fail("socket", fd) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        switch address.host {
        case .ipv4(let a):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = address.port.bigEndian
            sin.sin_addr.s_addr = a
            bound = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6, .any:
            if case .any = address.host {
                // Every address, IPv4 ones as IPv4-mapped (RFC 3493 §5.3).
                var off: Int32 = 0
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
            }
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = address.port.bigEndian
            if case .ipv6(let bytes) = address.host {
                withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: bytes) }
            }
            bound = withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        guard bound == 0 else { throw fail("bind", fd) }
        guard Glibc.listen(fd, backlog) == 0 else { throw fail("listen", fd) }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw fail("getsockname", fd) }
        let port: UInt16 = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, Int(port))
    }
}

/// The accept thread, joinable (Sources/Reactor/Thread.swift's LoopThread, in a box the
/// listener's lock can hold).
private final class LoopThreadBox: Sendable {
    private let thread: LoopThread

    init(spawn body: @escaping () -> Void) {
        thread = LoopThread.spawn(body)
    }

    func join() { thread.join() }
}

/// Starts `body` on a detached thread; false when the system has no thread to give (the
/// connection is then closed, never the process stopped).
private func spawnDetached(_ body: @escaping () -> Void) -> Bool {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
        &thread, &attributes,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    if result != 0 {
        Unmanaged<Box>.fromOpaque(box).release()
        return false
    }
    return true
}
