import Foundation
import Glibc
public import Logging
import Synchronization

/// Follows the config directory with inotify and reports which sites changed (issue 4).
///
/// Events are mapped to site names (`sites/NAME/...`), collected, and handed over once the
/// directory has been quiet for `debounce` (at most `maximumDelay` after the first event), so a
/// burst of writes is one reload. A site whose file was modified but not yet closed waits for the
/// close (at most `unclosedWriteGrace`), so a file written in several `write`s is read whole.
/// Queue overflow, a swap of a `..data` symlink (Kubernetes ConfigMap and Secret volumes), a
/// change of `sites/` itself, `requestFullRescan()` (SIGHUP) and the optional periodic timer
/// ask for a full rescan.
public final class ConfigWatcher: @unchecked Sendable {
    // @unchecked: all state but the wake-up pipe and the stop flag is touched by the watcher's
    // own thread only.

    /// Quiet time before a batch of changes is applied.
    public static let debounce: Int64 = 100
    /// Longest a continuous burst of events may hold a reload back, in milliseconds.
    public static let maximumDelay: Int64 = 1_000
    /// Longest a file opened for writing and not closed holds its site back, in milliseconds.
    public static let unclosedWriteGrace: Int64 = 2_000
    /// Bytes read from inotify at once.
    static let eventBufferSize = 64 * 1024

    /// What changed: site names under `sites/`, a full rescan, or the default certificate.
    public struct Change: Sendable, Equatable {
        public var sites: Set<String> = []
        public var full = false
        public var defaultCertificate = false
        /// The server's settings file (aasad.yaml) at the top of the config directory changed.
        public var settings = false

        public var isEmpty: Bool { sites.isEmpty && !full && !defaultCertificate && !settings }
    }

    private enum Watched {
        case root
        case sites
        case site(String)
        case siteTLS(String)
        case defaultTLS
    }

    private let root: String
    private let logger: Logger
    private let rescanInterval: Int64?
    private let apply: (Change) -> Void
    private let inotify: Int32
    private let wakePipe: [Int32]
    private let stopRequested = Atomic<Bool>(false)
    private let fullRescanRequested = Atomic<Bool>(false)
    private var watches: [Int32: Watched] = [:]
    private var watchLimitReported = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    private var pending = Change()
    private var firstEvent: Int64?
    private var lastEvent: Int64 = 0
    /// Sites with a file modified and not yet closed, since when.
    private var openWrites: [String: Int64] = [:]
    private var lastRescan: Int64

    /// `apply` runs on the watcher's thread with each batch of changes.
    public init(root: String, rescanInterval: Int64?, logger: Logger, apply: @escaping (Change) -> Void) throws {
        self.root = root
        self.rescanInterval = rescanInterval
        self.logger = logger
        self.apply = apply
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { throw WatchError("inotify_init1 failed (errno \(errno))") }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw WatchError("pipe failed (errno \(errno))") }
        wakePipe = fds
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        lastRescan = Self.milliseconds()
        watchEverything()
    }

    deinit {
        close(inotify)
        wakePipe.forEach { _ = close($0) }
    }

    public struct WatchError: Error, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    public func start() {
        let t = Thread { [self] in
            run()
            finished.signal()
        }
        t.name = "aasad-watcher"
        thread = t
        t.start()
    }

    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
        if thread != nil { finished.wait() }
    }

    /// Asks for a full rescan (SIGHUP); safe from any thread.
    public func requestFullRescan() {
        fullRescanRequested.store(true, ordering: .releasing)
        wake()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)
    }

    static func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    // MARK: - Watches

    private static let directoryMask = UInt32(
        IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_CLOSE_WRITE | IN_MODIFY)

    private func add(_ path: String, _ kind: Watched) {
        let wd = inotify_add_watch(inotify, path, Self.directoryMask)
        if wd >= 0 {
            watches[wd] = kind
        } else if errno == ENOSPC && !watchLimitReported {
            watchLimitReported = true
            logger.warning(
                "inotify watch limit reached; raise fs.inotify.max_user_watches, or changes to some sites are seen only by --rescan-interval or SIGHUP"
            )
        }
    }

    /// Watches the root, `sites/`, every site directory and its `tls/`, and the default `tls/`.
    /// inotify_add_watch returns the existing watch for a directory already watched.
    private func watchEverything() {
        add(root, .root)
        add(root + "/tls", .defaultTLS)
        add(root + "/sites", .sites)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/sites")) ?? [] where !name.hasPrefix(".") {
            watchSite(name)
        }
    }

    private func watchSite(_ name: String) {
        let path = root + "/sites/" + name
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return }
        add(path, .site(name))
        if FileManager.default.fileExists(atPath: path + "/tls") { add(path + "/tls", .siteTLS(name)) }
    }

    // MARK: - The loop

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.eventBufferSize, alignment: 8)
        defer { buffer.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe[0], events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, Int32(nextTimeout()))
            if fds[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 64)
                while read(wakePipe[0], &sink, sink.count) > 0 {}
            }
            if fds[0].revents != 0 { readEvents(buffer) }
            let now = Self.milliseconds()
            if fullRescanRequested.exchange(false, ordering: .acquiring) {
                note(now) { $0.full = true }
            }
            if let interval = rescanInterval, now - lastRescan >= interval * 1000 {
                note(now) { $0.full = true }
            }
            flushIfDue(now)
        }
    }

    /// How long poll may sleep: until the batch is due, the periodic rescan, or 1 s.
    private func nextTimeout() -> Int64 {
        var timeout: Int64 = 1000
        if let first = firstEvent {
            let now = Self.milliseconds()
            timeout = max(0, min(lastEvent + Self.debounce, first + Self.maximumDelay) - now)
            if !openWrites.isEmpty { timeout = min(timeout, 50) }
        }
        return timeout
    }

    private func note(_ now: Int64, _ change: (inout Change) -> Void) {
        change(&pending)
        if firstEvent == nil { firstEvent = now }
        lastEvent = now
    }

    private func readEvents(_ buffer: UnsafeMutableRawBufferPointer) {
        while true {
            let n = read(inotify, buffer.baseAddress, buffer.count)
            if n <= 0 { return }
            let now = Self.milliseconds()
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[nameStart..<(nameStart + Int(event.len))])
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                handle(event, name: name, now: now)
                offset = nameStart + Int(event.len)
            }
        }
    }

    private func handle(_ event: inotify_event, name: String, now: Int64) {
        let mask = event.mask
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            logger.warning("inotify queue overflowed; rescanning everything")
            note(now) { $0.full = true }
            return
        }
        // A watch removed (its directory deleted, or a ConfigMap's old target cleaned up) still
        // says which site to re-read.
        let watched = watches[event.wd]
        if mask & UInt32(IN_IGNORED) != 0 { watches[event.wd] = nil }
        guard let kind = watched else { return }
        switch kind {
        case .root:
            if name == "sites" || name.hasPrefix("..") {
                note(now) { $0.full = true }
            } else if name == "tls" {
                note(now) { $0.defaultCertificate = true }
            } else if name == "aasad.yaml" {
                note(now) { $0.settings = true }
            }
        case .sites:
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 || name.hasPrefix("..") {
                // The directory itself moved, or a ConfigMap swapped ..data under it.
                note(now) { $0.full = true }
            } else if !name.hasPrefix(".") {
                note(now) { $0.sites.insert(name) }
            }
        case .site(let site), .siteTLS(let site):
            if mask & UInt32(IN_MODIFY) != 0 {
                openWrites[site] = openWrites[site] ?? now
            }
            if mask & UInt32(IN_CLOSE_WRITE) != 0 {
                openWrites[site] = nil
            }
            note(now) { $0.sites.insert(site) }
        case .defaultTLS:
            note(now) { $0.defaultCertificate = true }
        }
    }

    private func flushIfDue(_ now: Int64) {
        guard let first = firstEvent else { return }
        guard now - lastEvent >= Self.debounce || now - first >= Self.maximumDelay else { return }
        // Sites still being written wait for their close, within the grace period.
        var held = Set<String>()
        for (site, since) in openWrites {
            if now - since < Self.unclosedWriteGrace { held.insert(site) } else { openWrites[site] = nil }
        }
        var batch = pending
        batch.sites.subtract(held)
        pending = Change(sites: held)
        firstEvent = held.isEmpty ? nil : now
        guard !batch.isEmpty else { return }
        if batch.full { lastRescan = now }
        apply(batch)
        if batch.full {
            watchEverything()
        } else {
            batch.sites.forEach(watchSite)
            if batch.defaultCertificate { add(root + "/tls", .defaultTLS) }
        }
    }
}
