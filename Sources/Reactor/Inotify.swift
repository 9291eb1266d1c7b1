import Glibc

/// An inotify instance and a `Wakeup`, for a thread that sleeps until files change or
/// another thread wakes it (the config watcher). Every call goes through the wrapper in
/// System.swift; the descriptors are closed when the instance goes.
public final class Inotify: @unchecked Sendable {
    // @unchecked: the descriptors are immutable, and `wake()` (the one call made from other
    // threads) only writes one byte to the pipe.

    /// Events a watch reports (inotify(7)).
    public struct Mask: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let created = Mask(rawValue: UInt32(IN_CREATE))
        public static let deleted = Mask(rawValue: UInt32(IN_DELETE))
        public static let movedFrom = Mask(rawValue: UInt32(IN_MOVED_FROM))
        public static let movedTo = Mask(rawValue: UInt32(IN_MOVED_TO))
        public static let attributes = Mask(rawValue: UInt32(IN_ATTRIB))
        public static let deletedSelf = Mask(rawValue: UInt32(IN_DELETE_SELF))
        public static let movedSelf = Mask(rawValue: UInt32(IN_MOVE_SELF))
        public static let closedAfterWrite = Mask(rawValue: UInt32(IN_CLOSE_WRITE))
        public static let modified = Mask(rawValue: UInt32(IN_MODIFY))
        /// Watch only a directory: anything else fails with ENOTDIR (one call instead of a stat
        /// and a watch).
        public static let onlyDirectory = Mask(rawValue: UInt32(IN_ONLYDIR))
        /// The kernel's event queue overflowed: events were lost.
        public static let overflow = Mask(rawValue: UInt32(IN_Q_OVERFLOW))
        /// The watch was removed (its directory deleted or unmounted, or `removeWatch`).
        public static let ignored = Mask(rawValue: UInt32(IN_IGNORED))
    }

    /// One event: the watch, what happened, and the name inside the watched directory (empty
    /// for the directory itself).
    public struct Event: Sendable {
        public var watch: Int32
        public var mask: Mask
        public var name: String
    }

    private let fd: Int32
    private let wakeup: Wakeup

    public init() throws(SystemError) {
        fd = try syscallOrThrow("inotify_init1", { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) })
        do throws(SystemError) {
            wakeup = try Wakeup()
        } catch {
            _ = close(fd)
            throw error
        }
    }

    deinit {
        _ = close(fd)
    }

    /// Watches a directory (inotify returns the existing watch for one already watched). Throws
    /// ENOSPC (`isWatchLimit`) when `fs.inotify.max_user_watches` is reached.
    public func addWatch(_ path: String, _ mask: Mask) throws(SystemError) -> Int32 {
        try syscallOrThrow("inotify_add_watch", { path.withCString { inotify_add_watch(fd, $0, mask.rawValue) } })
    }

    /// Stops a watch; an `ignored` event follows.
    public func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(fd, watch)
    }

    /// Sleeps until events are ready, `wake()` is called, or `milliseconds` pass; returns whether
    /// events are ready. A wake-up is consumed here.
    public func wait(milliseconds: Int64) -> Bool { wakeup.wait(milliseconds: milliseconds, orReadable: fd) }

    /// Wakes the thread in `wait`; safe from any thread.
    public func wake() { wakeup.wake() }

    /// Reads every queued event, `buffer` at a time (it must hold at least one event with a
    /// name of NAME_MAX bytes), and hands each to `body` in order.
    public func readEvents(into buffer: UnsafeMutableRawBufferPointer, _ body: (Event) -> Void) throws(SystemError) {
        while true {
            guard case .done(let n) = try syscall("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) }), n > 0 else {
                return
            }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameEnd = min(n, nameStart + Int(event.len))
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[nameStart..<nameEnd])
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                body(Event(watch: event.wd, mask: Mask(rawValue: event.mask), name: name))
                offset = nameStart + Int(event.len)
            }
        }
    }
}

extension SystemError {
    /// ENOSPC from `inotify_add_watch`: the per-user watch limit is reached.
    public var isWatchLimit: Bool { errno == ENOSPC }
}
