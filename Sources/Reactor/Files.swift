import CAASALinux
import Glibc

/// What `stat`, `lstat` or `fstat` says about a file: the fields the config loader reads.
public struct FileStatus: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, other
    }

    public var kind: Kind
    /// Last content change (`st_mtim`), whole seconds since the epoch; tools can set it back.
    public var modified: Int64
    /// Last change of content or attributes (`st_ctim`), whole seconds since the epoch; only the
    /// kernel sets it.
    public var changed: Int64
    /// `st_mtim` to the nanosecond: a file replaced within one second, even on a reused inode.
    public var modifiedNanoseconds: Int64
    /// The inode number: a file replaced by rename(2) gets another one, whatever its times say.
    public var inode: UInt64
    /// The device the file is on (`st_dev`): with `inode`, which file it is.
    public var device: UInt64
    /// How many names the file has (`st_nlink`): more than one for a hard link.
    public var links: UInt64
    public var size: Int64

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        default: kind = .other
        }
        modified = Int64(info.st_mtim.tv_sec)
        changed = Int64(info.st_ctim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        inode = UInt64(info.st_ino)
        device = UInt64(info.st_dev)
        links = UInt64(info.st_nlink)
        size = Int64(info.st_size)
    }
}

/// File calls for reading configuration off the event loops (the config directory), through the
/// one wrapper in System.swift: EINTR retried, EBADF and EFAULT stop the process, every other
/// errno thrown as a `SystemError` for the caller to judge. Paths go to the kernel through
/// `withCString`, which passes a string's own bytes: the implicit conversion of a String argument
/// copies it into a new array on every call (five a site at a start of 100,000 sites).
public enum Files {
    /// `first + second + third` made with one allocation (`+` makes one a step) and memcpy
    /// (`reserveCapacity` and `+=` cost about 500 instructions a path in callgrind): a start
    /// builds a few paths for each of its sites.
    public static func joined(_ first: String, _ second: String, _ third: String = "") -> String {
        var (first, second, third) = (first, second, third)
        return String(unsafeUninitializedCapacity: first.utf8.count + second.utf8.count + third.utf8.count) { buffer in
            guard let start = buffer.baseAddress else { return 0 }
            let one = copy(&first, to: start)
            let two = copy(&second, to: start + one)
            return one + two + copy(&third, to: start + one + two)
        }
    }

    /// Copies a string's UTF-8 to `target`; returns its length.
    private static func copy(_ part: inout String, to target: UnsafeMutablePointer<UInt8>) -> Int {
        part.withUTF8 { bytes in
            if let source = bytes.baseAddress, !bytes.isEmpty { memcpy(target, source, bytes.count) }
            return bytes.count
        }
    }

    /// `stat`: follows symbolic links.
    public static func status(_ path: String) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallOrThrow("stat", { path.withCString { stat($0, &info) } })
        return FileStatus(info)
    }

    /// `lstat`: the entry itself, a symbolic link included.
    public static func linkStatus(_ path: String) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallOrThrow("lstat", { path.withCString { lstat($0, &info) } })
        return FileStatus(info)
    }

    /// `fstat` of an open descriptor.
    public static func status(of fd: Int32) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try syscallOrThrow("fstat", { fstat(fd, &info) })
        return FileStatus(info)
    }

    /// Opens a file read-only, close-on-exec and non-blocking: a FIFO or a device opened by
    /// mistake returns at once instead of blocking the caller (check its kind with
    /// `status(of:)` before reading).
    public static func openForReading(_ path: String) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { path.withCString { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } })
    }

    /// The same, but a symbolic link as the last component is not followed: ELOOP instead.
    public static func openForReadingNotFollowing(_ path: String) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { path.withCString { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW) } })
    }

    /// Opens the directory at `path` (symbolic links followed) to look names up in (`openat`):
    /// each lookup walks one name, not the whole path again.
    public static func openDirectory(_ path: String) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { path.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } })
    }

    /// Opens the entry `name` of the directory open at `directory` when the entry is a directory
    /// itself: a symbolic link (even to a directory) or any other file fails, ENOTDIR (Linux
    /// checks O_DIRECTORY first) or ELOOP. What is opened is the directory
    /// the kernel found then, whatever the name is swapped for afterwards.
    public static func openDirectoryNotFollowing(_ name: String, in directory: Int32) throws(SystemError) -> Int32 {
        try syscallOrThrow("openat", { name.withCString { openat(directory, $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) } })
    }

    /// `openForReadingNotFollowing` of the entry `name` of the directory open at `directory`.
    public static func openForReadingNotFollowing(_ name: String, in directory: Int32) throws(SystemError) -> Int32 {
        try syscallOrThrow("openat", { name.withCString { openat(directory, $0, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW) } })
    }

    /// The same for the entry named by the end of `path` from its UTF-8 byte `offset` on (the
    /// caller has checked it is one name): passed from the path's own bytes, no copy of the name.
    public static func openForReadingNotFollowing(_ path: String, nameAt offset: Int, in directory: Int32) throws(SystemError) -> Int32 {
        precondition(offset >= 0 && offset < path.utf8.count, "a name's offset outside its path")
        return try syscallOrThrow(
            "openat", { path.withCString { openat(directory, $0 + offset, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW) } })
    }

    /// A descriptor that names a file without opening it (O_PATH, symbolic links followed):
    /// `status(of:)` and `path(of:)` work on it, reading does not. What a link leads to is
    /// looked at before it is opened, since opening some devices acts (a tape rewinds, a
    /// watchdog arms).
    public static func openLocation(_ path: String) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { path.withCString { CAASALinux_open_location($0) } })
    }

    /// A descriptor for the directory the entry `name` of the directory open at `directory`
    /// leads to (a symbolic link followed; O_PATH), to open its names in with `openat`: one name
    /// walked instead of a whole path. Anything but a directory fails ENOTDIR, unopened.
    public static func openDirectoryLocation(_ name: String, in directory: Int32) throws(SystemError) -> Int32 {
        try syscallOrThrow("openat", { name.withCString { CAASALinux_open_directory_location(directory, $0) } })
    }

    /// `openLocation` of the entry named by the end of `path` from its UTF-8 byte `offset` on, in
    /// the directory open at `directory` (a link followed from there).
    public static func openLocation(_ path: String, nameAt offset: Int, in directory: Int32) throws(SystemError) -> Int32 {
        precondition(offset >= 0 && offset < path.utf8.count, "a name's offset outside its path")
        return try syscallOrThrow("openat", { path.withCString { CAASALinux_open_location_at(directory, $0 + offset) } })
    }

    /// Opens for reading (close-on-exec, non-blocking) the very file `location` names, through
    /// the kernel's `/proc/self/fd/N` link: the same inode even if its name was replaced since.
    /// Needs /proc, as `path(of:)` does (and as the process's own arguments do: without /proc,
    /// Swift's CommandLine reads none).
    public static func reopenForReading(_ location: Int32) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { open("/proc/self/fd/\(location)", O_RDONLY | O_CLOEXEC | O_NONBLOCK) })
    }

    /// The absolute path with every symbolic link, `.` and `..` resolved (`realpath`).
    public static func realPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = Glibc.realpath(path, nil) else { throw SystemError(call: "realpath", errno: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The path an open descriptor was opened at, symbolic links resolved (the kernel's
    /// `/proc/self/fd/N`): what was actually opened, whatever a name is swapped for afterwards.
    public static func path(of fd: Int32) throws(SystemError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = try syscallOrThrow("readlink", { readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1) })
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The names in a directory, `.` and `..` left out, in the order the file system gives them:
    /// `opendir` and `readdir` (FileManager's listing costs several times more per name, which
    /// counts at 100,000 site directories). At most `limit` names: a directory others can write
    /// to (a shared storage volume) cannot make its reader hold more than it expects. A name that
    /// is not valid UTF-8 has its bad bytes replaced (U+FFFD); `entryBytes` keeps them.
    public static func entries(of path: String, limit: Int = .max) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw SystemError(call: "opendir", errno: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        try eachName(directory) { name, _ in
            guard names.count < limit else { return false }
            names.append(String(decoding: name, as: UTF8.self))
            return true
        }
        return names
    }

    /// The names in the directory open at `fd`, as `entries` spells them, `.` and `..` left out:
    /// `getdents64` on the descriptor itself (fdopendir would add an fstat, two fcntl calls and a
    /// 32 KB buffer per directory, and at a full load every site's directory is listed). Read
    /// from the descriptor's offset: list a descriptor once.
    /// `interned`: names taken as these very strings when listed (no copy of each: a site's
    /// `apple-app-site-association` is too long for a string kept inline).
    /// At most `limit` names, and no more of the directory read once it has more (a directory
    /// others can write to, a tenant's site, cannot make its reader hold a million names).
    public static func entries(in fd: Int32, interned: [String] = [], limit: Int = .max) throws(SystemError) -> [String] {
        var names: [String] = []
        names.reserveCapacity(4)
        var failure: SystemError?
        withUnsafeTemporaryAllocation(byteCount: listingBufferSize, alignment: 8) { buffer in
            do throws(SystemError) {
                while names.count < limit {
                    let count = try syscallOrThrow("getdents64", { CAASALinux_getdents64(fd, buffer.baseAddress, buffer.count) })
                    if count == 0 { return }
                    try eachRecord(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { name in
                        guard names.count < limit else { return }
                        names.append(interned.first { same($0, name) } ?? String(decoding: name, as: UTF8.self))
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return names
    }

    /// Whether `name`'s bytes are `known`'s UTF-8: memcmp, not the generic `elementsEqual`, which
    /// walks both byte by byte.
    private static func same(_ known: String, _ name: UnsafeRawBufferPointer) -> Bool {
        guard known.utf8.count == name.count else { return false }
        guard let start = name.baseAddress, !name.isEmpty else { return true }
        return known.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, start, name.count) == 0 }
            ?? known.utf8.elementsEqual(name)
    }

    /// Bytes asked of `getdents64` at once: a site directory's few names fit many times over.
    static let listingBufferSize = 4096

    /// Each name in `records`, `linux_dirent64` records as `getdents64` gives them (a 64-bit inode
    /// and offset, a 16-bit record length, a type byte, the name ending in NUL), `.` and `..`
    /// left out. A record length that does not fit is EIO: a kernel's answer never has one.
    static func eachRecord(_ records: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) throws(SystemError) {
        let nameOffset = 19
        var offset = 0
        while offset < records.count {
            guard records.count - offset > nameOffset else { throw SystemError(call: "getdents64", errno: EIO) }
            let length = Int(records.loadUnaligned(fromByteOffset: offset + 16, as: UInt16.self))
            guard length > nameOffset, length <= records.count - offset else { throw SystemError(call: "getdents64", errno: EIO) }
            let field = UnsafeRawBufferPointer(rebasing: records[(offset + nameOffset)..<(offset + length)])
            let name = UnsafeRawBufferPointer(rebasing: field.prefix { $0 != 0 })
            offset += length
            if name.count == 1 && name[0] == 0x2E { continue }
            if name.count == 2 && name[0] == 0x2E && name[1] == 0x2E { continue }
            body(name)
        }
    }

    /// A directory entry as readdir gives it: its name (as `entries` spells it) and its type
    /// (`d_type`), nil when the file system does not say (DT_UNKNOWN: some network and older
    /// file systems), where the caller looks with `linkStatus`. The type is the entry's own: a
    /// symbolic link is `.symbolicLink`, never what it points to.
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var kind: FileStatus.Kind?

        public init(name: String, kind: FileStatus.Kind?) {
            self.name = name
            self.kind = kind
        }
    }

    /// `entries` with each entry's type as readdir gave it, which spares an lstat per name where
    /// the file system gives it. The type is what the entry was when listed: a file replaced
    /// since may be another.
    public static func typedEntries(of path: String, limit: Int = .max) throws(SystemError) -> [Entry] {
        guard let directory = opendir(path) else { throw SystemError(call: "opendir", errno: errno) }
        defer { closedir(directory) }
        var entries: [Entry] = []
        try eachName(directory) { name, type in
            guard entries.count < limit else { return false }
            let kind: FileStatus.Kind? =
                switch Int32(type) {
                case Int32(DT_REG): .regular
                case Int32(DT_DIR): .directory
                case Int32(DT_LNK): .symbolicLink
                case Int32(DT_UNKNOWN): nil
                default: .other
                }
            entries.append(Entry(name: String(decoding: name, as: UTF8.self), kind: kind))
            return true
        }
        return entries
    }

    /// The names in the directory open at `fd`, `.` and `..` left out, as readdir's bytes with a
    /// final NUL (what `unlinkat` and `openat` take: a name that is not valid UTF-8 is passed back
    /// exactly); nil when there are more than `limit`, so that a directory of a million names is
    /// never listed whole. Read through a duplicate of `fd` (fdopendir takes the descriptor it is
    /// given, and closedir closes it), so `fd` stays the caller's; the duplicate is closed before
    /// this returns. The duplicate shares `fd`'s offset, which the listing moves: list a
    /// descriptor once. A directory opened with O_NOFOLLOW is listed, never one swapped in at its path.
    public static func entryBytes(in fd: Int32, limit: Int) throws(SystemError) -> [[CChar]]? {
        // Close-on-exec as every other descriptor here: a plain dup would be inherited by a
        // program another thread starts while the directory is being listed.
        let listing = try syscallOrThrow("fcntl", { fcntl(fd, F_DUPFD_CLOEXEC, 0) })
        guard let directory = fdopendir(listing) else {
            let error = SystemError(call: "fdopendir", errno: errno)
            close(listing)
            throw error
        }
        defer { closedir(directory) }
        var names: [[CChar]] = []
        var complete = true
        try eachName(directory) { name, _ in
            guard names.count < limit else {
                complete = false
                return false
            }
            names.append(name.map { CChar(bitPattern: $0) } + [0])
            return true
        }
        return complete ? names : nil
    }

    /// Calls `body` with each name readdir gives (its bytes, without the NUL) and its `d_type`,
    /// `.` and `..` left out, until it returns false or the directory ends; a readdir error
    /// throws.
    private static func eachName(_ directory: OpaquePointer, _ body: (UnsafeRawBufferPointer, UInt8) -> Bool) throws(SystemError) {
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw SystemError(call: "readdir", errno: errno) }
                return
            }
            // The name read where it lies in readdir's buffer, up to its NUL: a record there is
            // only as long as its name (`d_reclen`), and copying `d_name`'s whole 256 bytes out
            // read past the buffer's end for a short last record (a crash when that end was a
            // page's). Both fields are read at the record's address plus their offsets, never
            // through `pointee`, which the language may load whole.
            let record = UnsafeRawPointer(entry)
            let type = record.load(fromByteOffset: direntTypeOffset, as: UInt8.self)
            let start = record + direntNameOffset
            let name = UnsafeRawBufferPointer(start: start, count: strlen(start.assumingMemoryBound(to: CChar.self)))
            if name.count == 1 && name[0] == 0x2E { continue }
            if name.count == 2 && name[0] == 0x2E && name[1] == 0x2E { continue }
            if !body(name, type) { return }
        }
    }

    /// Where a `dirent`'s type and name lie in its record.
    private static let direntTypeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!
    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// Reads into `buffer`; 0 at the end of the file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try syscallOrThrow("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) })
    }

    /// Closes a descriptor this process opened (a file or a socket). Linux releases it even when
    /// close reports EINTR, so it is never retried: a retry could close a descriptor another
    /// thread just got.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Opens (creating with `mode`) a file to append to, close-on-exec: a log.
    public static func openForAppending(_ path: String, mode: UInt32 = 0o640) throws(SystemError) -> Int32 {
        try syscallOrThrow("open", { open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode) })
    }

    /// Puts `fd`'s file under the descriptor number `target` (closing what `target` had, in one
    /// step) and keeps `target` close-on-exec: a log reopened after rotation.
    public static func replace(_ target: Int32, with fd: Int32) throws(SystemError) {
        _ = try syscallOrThrow("dup2", { dup2(fd, target) })
        _ = try syscallOrThrow("fcntl", { fcntl(target, F_SETFD, FD_CLOEXEC) })
    }

    /// Writes all of `bytes` unless the file refuses (a full disk, a closed pipe): returns how
    /// many were written. EINTR is retried by the syscall wrapper.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            guard let n = try? syscallOrThrow("write", { Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset) }), n > 0
            else { break }
            offset += n
        }
        return offset
    }
}

extension SystemError {
    /// ENOENT or ENOTDIR: there is nothing by that name (a path component is missing or is not
    /// a directory). Every other error says something is there that cannot be read now.
    public var isNoSuchFile: Bool { errno == ENOENT || errno == ENOTDIR }

    /// The errno's symbolic name for the common file errors (`EACCES`), else `errno N`: what an
    /// operator searches for.
    public var errnoName: String {
        let names: [Int32: String] = [
            EACCES: "EACCES", EPERM: "EPERM", EMFILE: "EMFILE", ENFILE: "ENFILE", EIO: "EIO", ENOENT: "ENOENT", ENOTDIR: "ENOTDIR",
            ELOOP: "ELOOP", ENAMETOOLONG: "ENAMETOOLONG", ENOMEM: "ENOMEM", EISDIR: "EISDIR", ENOSPC: "ENOSPC",
        ]
        return names[errno] ?? "errno \(errno)"
    }

    /// `permission denied (EACCES)`: the system's words, lower case, and the name to search for.
    public var reason: String {
        let text = describeErrno(errno)
        return text.prefix(1).lowercased() + text.dropFirst() + " (\(errnoName))"
    }

}
