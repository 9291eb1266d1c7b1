import Glibc

/// File calls for a state directory that several processes share (ACME's storage: lock files,
/// certificates, challenge answers), through the one syscall wrapper. Off the event loops.
extension Files {
    /// Creates a file that must not exist yet (O_EXCL: atomic on local filesystems and NFSv3+),
    /// write-only, close-on-exec. EEXIST is thrown like any other errno: the caller judges it.
    public static func createExclusive(_ path: String, mode: UInt32) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) })
    }

    /// Replaces the file at `path` with `bytes` so that a reader (another replica, the watcher)
    /// sees the old bytes or the new ones, never a part: written to a temporary file beside it
    /// (a random name, created exclusively, so neither a link planted there nor a second process
    /// writing the same file at once, as during an upgrade, is ever written through, with `mode`
    /// from its first byte), synced, renamed over the old one, and the directory synced so that
    /// the rename survives a crash (as certbot and Caddy write certificates). ACME's storage
    /// (`AtomicFile`), `state/cache/validated-contents` and `state/served-first` are written so.
    public static func replaceAtomically(_ path: String, with bytes: [UInt8], mode: UInt32) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = directory + "/." + name + ".tmp-" + String(UInt64.random(in: .min ... .max), radix: 16)
        let fd = try createExclusive(temporary, mode: mode)
        do throws(SystemError) {
            defer { close(fd) }
            try writeAll(fd, bytes, at: 0)
            try sync(fd)
        } catch {
            try? remove(temporary)
            throw error
        }
        do throws(SystemError) {
            try rename(temporary, to: path)
        } catch {
            try? remove(temporary)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Opens an existing regular file for reading and writing in place, close-on-exec.
    public static func openForUpdating(_ path: String) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) })
    }

    /// Writes all of `bytes` at `offset` (pwrite); throws when the file refuses (a full disk).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            // withUnsafeBytes rethrows untyped errors: the typed one travels in a Result.
            let n = try bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in
                    try syscallOrThrow("pwrite", { pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done)) })
                }
            }.get()
            guard n > 0 else { throw SystemError(call: "pwrite", errno: EIO) }
            done += n
        }
    }

    /// `ftruncate`: cuts the file to `length` bytes.
    public static func truncate(_ fd: Int32, length: Int64) throws(SystemError) {
        _ = try syscallOrThrow("ftruncate", { ftruncate(fd, off_t(length)) })
    }

    /// `fsync`: the file's data and metadata are on the device.
    public static func sync(_ fd: Int32) throws(SystemError) {
        _ = try syscallOrThrow("fsync", { fsync(fd) })
    }

    /// Makes a renamed or created entry durable: fsync of the directory that holds it.
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let fd = try syscallOrThrow("open", { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
        defer { close(fd) }
        try sync(fd)
    }

    /// `rename`: atomically replaces `target` with `source` (same filesystem).
    public static func rename(_ source: String, to target: String) throws(SystemError) {
        _ = try syscallOrThrow("rename", { Glibc.rename(source, target) })
    }

    /// `link`: a second name for a file; EEXIST when `target` exists (never replaces it).
    public static func link(_ source: String, to target: String) throws(SystemError) {
        _ = try syscallOrThrow("link", { Glibc.link(source, target) })
    }

    /// `unlink`.
    public static func remove(_ path: String) throws(SystemError) {
        _ = try syscallOrThrow("unlink", { unlink(path) })
    }

    /// `mkdir`; an existing directory is no error.
    public static func makeDirectory(_ path: String, mode: UInt32) throws(SystemError) {
        do {
            _ = try syscallOrThrow("mkdir", { mkdir(path, mode) })
        } catch  where error.errno == EEXIST {
            guard (try? status(path).kind) == .directory else { throw error }
        }
    }

    /// A regular file's bytes, at most `limit` of them: a longer file throws EFBIG, so a file
    /// someone else wrote cannot make the reader hold more than it expects.
    public static func readFile(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let fd = try syscallOrThrow("open", { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) })
        defer { close(fd) }
        return try readAll(fd, limit: limit)
    }

    /// Everything from `fd`'s current offset to its end, at most `limit` bytes (EFBIG past it).
    public static func readAll(_ fd: Int32, limit: Int) throws(SystemError) -> [UInt8] {
        guard try status(of: fd).kind == .regular else { throw SystemError(call: "read", errno: EINVAL) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try buffer.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try read(fd, into: raw) } }.get()
            if n == 0 { return out }
            guard out.count + n <= limit else { throw SystemError(call: "read", errno: EFBIG) }
            out += buffer[0..<n]
        }
    }
}
