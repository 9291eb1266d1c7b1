import CAASALinux
import Glibc

/// One thread's epoll instance. It only waits and reports: the owner dispatches on the 64-bit data
/// it registered with each descriptor (a closed `switch`, no callbacks), so a loop iteration is
/// one `epoll_wait` and a scan of the results.
///
/// Not thread-safe: everything but `wake()` must be called from the loop's own thread.
public final class EventLoop {
    /// Events taken from the kernel per `epoll_wait`: a bound on the work of one iteration; the
    /// rest wait for the next one.
    public static let maximumEventsPerWait = 256

    /// The data of the loop's own wake-up descriptor: never a registration of the owner's.
    public static let wakeData = UInt64.max

    public struct Event {
        public var data: UInt64
        public var readable: Bool
        public var writable: Bool
        /// The peer closed or the socket failed: read to find out, then close.
        public var hangup: Bool
    }

    private let epfd: Int32
    private let wakeFD: Int32
    private let buffer: UnsafeMutablePointer<epoll_event>
    private var ownerThread: pthread_t?

    public init() throws(SystemError) {
        epfd = try syscallOrThrow("epoll_create1", { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        wakeFD = try syscallOrThrow("eventfd", { eventfd(0, CAASALinux_EFD_NONBLOCK | CAASALinux_EFD_CLOEXEC) })
        buffer = .allocate(capacity: Self.maximumEventsPerWait)
        try add(wakeFD, data: Self.wakeData, read: true, write: false)
    }

    deinit {
        close(epfd)
        close(wakeFD)
        buffer.deallocate()
    }

    /// `hangup`: the peer's FIN is reported even while nothing is read (EPOLLRDHUP alone).
    private func mask(read: Bool, write: Bool, hangup: Bool = false) -> UInt32 {
        (read ? CAASALinux_EPOLLIN | CAASALinux_EPOLLRDHUP : 0) | (write ? CAASALinux_EPOLLOUT : 0)
            | (hangup ? CAASALinux_EPOLLRDHUP : 0)
    }

    /// `exclusive`: EPOLLEXCLUSIVE, for a descriptor several loops wait on (a listening socket
    /// every worker accepts on): one event wakes one of them, not all. The kernel takes it only
    /// with EPOLLIN, EPOLLOUT and a few others (not EPOLLRDHUP, which a listener has no use for).
    public func add(_ fd: Int32, data: UInt64, read: Bool, write: Bool, exclusive: Bool = false) throws(SystemError) {
        let events =
            exclusive
            ? (read ? CAASALinux_EPOLLIN : 0) | (write ? CAASALinux_EPOLLOUT : 0) | CAASALinux_EPOLLEXCLUSIVE
            : mask(read: read, write: write)
        var ev = CAASALinux_epoll_event(events, data)
        _ = try syscallOrThrow("epoll_ctl ADD", { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) })
    }

    /// `hangup`: watch for the peer's FIN without reading (a connection waiting for an answer).
    public func modify(_ fd: Int32, data: UInt64, read: Bool, write: Bool, hangup: Bool = false) throws(SystemError) {
        var ev = CAASALinux_epoll_event(mask(read: read, write: write, hangup: hangup), data)
        _ = try syscallOrThrow("epoll_ctl MOD", { epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) })
    }

    public func remove(_ fd: Int32) {
        var ev = CAASALinux_epoll_event(0, 0)
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &ev)
    }

    /// Waits for events (at most `timeoutMilliseconds`, -1 for ever) and calls `body` for each.
    /// Wake-ups are consumed here and reported as one event with `wakeData`.
    public func wait(timeoutMilliseconds: Int32, _ body: (Event) -> Void) throws(SystemError) {
        assertOnLoopThread()
        let n: Int32
        switch try syscall("epoll_wait", { epoll_wait(epfd, buffer, Int32(Self.maximumEventsPerWait), timeoutMilliseconds) }) {
        case .done(let count): n = count
        case .wouldBlock: n = 0
        }
        for i in 0..<Int(n) {
            let raw = buffer.advanced(by: i)
            let data = CAASALinux_epoll_event_data(raw)
            let bits = CAASALinux_epoll_event_events(raw)
            if data == Self.wakeData {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
            }
            body(
                Event(
                    data: data, readable: bits & CAASALinux_EPOLLIN != 0, writable: bits & CAASALinux_EPOLLOUT != 0,
                    hangup: bits & (CAASALinux_EPOLLHUP | CAASALinux_EPOLLERR | CAASALinux_EPOLLRDHUP) != 0))
        }
    }

    /// Interrupts a `wait` from any thread.
    public func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    /// Binds the loop to the calling thread; later calls from elsewhere are bugs.
    public func claimThread() {
        ownerThread = pthread_self()
    }

    @inline(__always)
    private func assertOnLoopThread() {
        assert(ownerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? true, "EventLoop used off its thread")
    }
}
