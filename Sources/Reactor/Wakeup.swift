import Glibc

/// A thread that sleeps until another thread wakes it, a descriptor is readable, or a time
/// passes: a non-blocking pipe and poll(2). Used by the config watcher (with its inotify
/// descriptor) and the ACME certificate manager. The descriptors close when the instance goes.
public final class Wakeup: @unchecked Sendable {
    // @unchecked: the descriptors are immutable, and `wake()` (the one call made from other
    // threads) only writes one byte to the pipe.
    private let pipeEnds: (read: Int32, write: Int32)

    public init() throws(SystemError) {
        var fds: [Int32] = [0, 0]
        _ = try syscallOrThrow("pipe", { pipe(&fds) })
        for end in fds {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        pipeEnds = (fds[0], fds[1])
    }

    deinit {
        _ = close(pipeEnds.read)
        _ = close(pipeEnds.write)
    }

    /// Sleeps until `wake()` is called, `descriptor` (when given) is readable, or `milliseconds`
    /// pass; returns whether the descriptor is readable. A wake-up is consumed here.
    @discardableResult
    public func wait(milliseconds: Int64, orReadable descriptor: Int32? = nil) -> Bool {
        var fds = [pollfd(fd: pipeEnds.read, events: Int16(POLLIN), revents: 0)]
        if let descriptor { fds.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        let timeout = Int32(clamping: max(0, milliseconds))
        // EINTR is a wake-up like any other: the caller loops and checks its state.
        guard poll(&fds, nfds_t(fds.count), timeout) > 0 else { return false }
        if fds[0].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 64)
            while sink.withUnsafeMutableBytes({ Glibc.read(pipeEnds.read, $0.baseAddress, $0.count) }) > 0 {}
        }
        return fds.count > 1 && fds[1].revents != 0
    }

    /// Wakes the thread in `wait`; safe from any thread. A full pipe already holds a wake-up.
    public func wake() {
        var byte: UInt8 = 1
        _ = write(pipeEnds.write, &byte, 1)
    }
}
