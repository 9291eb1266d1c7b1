import Foundation
import Glibc
public import Reactor
import SafeText

/// Reading the config directory's files: bounded, never blocking, and telling "gone" apart
/// from "cannot be read now" (only a file that is gone stops being served).
extension ConfigLoader {
    /// Why a file could not be read.
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// The system call that failed, when one did.
        public var system: SystemError?

        public init(description: String, system: SystemError? = nil) {
            self.description = description
            self.system = system
        }

        init(_ error: SystemError) {
            self.init(description: error.reason, system: error)
        }

        /// ENOENT or ENOTDIR: there is no such file, so whatever it was is gone. Every other
        /// error (EACCES, EMFILE, EIO, a directory where a file should be) leaves it in place:
        /// only a file that is gone stops being served.
        public var isMissing: Bool { system?.isNoSuchFile ?? false }

        /// An error that may pass by the next read (an I/O error, no descriptor or memory left,
        /// an interrupted call), as opposed to a file that is refused as it is (a link out of the
        /// site, a FIFO, a hard link, EACCES): the former says nothing about the file's content.
        public var isTransient: Bool {
            guard let code = system?.errno else { return false }
            return [EIO, EMFILE, ENFILE, ENOMEM, ENOBUFS, EAGAIN, EINTR].contains(code)
        }
    }

    /// Reads up to `limit + 1` bytes of a file: one byte more than allowed tells "too large" apart
    /// from "exactly at the limit" without reading a huge file.
    public static func readBounded(path: String, limit: Int) -> Result<[UInt8], ReadError> {
        readFile(path: path, limit: limit).map(\.bytes)
    }

    /// What a site's file must be beyond a readable regular file: it is never read from a
    /// `tls/` directory (where keys are kept), and a page (served whatever it holds) must also
    /// lie in the site's own directory and have one name only. Checked on the opened descriptor.
    public struct FileRules: Sendable {
        /// The site directory as `loadSite` reads it; nil for a file outside any site (aasad.yaml,
        /// a file given to `validate`), which only has to be a regular file.
        public var siteDirectory: String?
        /// The config directory, whose `tls/` and whose sites' `tls/` are never read from.
        public var configRoot: String?
        /// A directory the file must be in once every symbolic link is resolved (its real path is
        /// compared, taken only when the file's path must be looked at): a symlink to a key or
        /// to `/proc/self/environ` would otherwise publish it.
        public var within: String?
        /// Whether a file with more than one name (`st_nlink > 1`, a hard link) is refused: a
        /// hard link to another site's `tls/key.pem` lies in the site's directory by every path
        /// check, and its content is what the page would serve.
        public var singleName = false
        /// Whether the site directory is a directory entry of `sites/`, not a symbolic link to a
        /// folder elsewhere (which could be a `tls/`): then a file opened without following a
        /// link is one of its direct entries, and needs no look at its path (a `readlink` per
        /// file saved at 100,000 sites).
        public var plainDirectory = false
        /// The directory the file is in, open (a site's `ConfigLoader.OpenedDirectory`, a site's
        /// `tls/`): its own entries are opened through it (`openat`), in the directory that was
        /// listed or opened and by a one-name walk.
        var directory: (path: String, descriptor: Int32)?

        public init(
            siteDirectory: String? = nil, configRoot: String? = nil, within: String? = nil, singleName: Bool = false,
            plainDirectory: Bool = false
        ) {
            self.siteDirectory = siteDirectory
            self.configRoot = configRoot
            self.within = within
            self.singleName = singleName
            self.plainDirectory = plainDirectory
        }
    }

    /// Reads up to `limit + 1` bytes of a regular file, with its time.
    ///
    /// The time is the later of the file's mtime and ctime (whole seconds), so that it moves
    /// whenever the file is replaced: `rsync -a`, `cp -p` and `touch -d` can set an mtime back
    /// (a roll-back to an older version), but not the ctime, which the kernel sets to now on
    /// every write, rename into place or attribute change. Last-Modified is built on it (with
    /// SiteRegistry's rule that a new content never gets an earlier or equal one), so a client's
    /// If-Modified-Since never matches a changed file (RFC 9110 §13.1.3). A chmod moves the
    /// ctime too; SiteRegistry keeps the Last-Modified of unchanged content. A time later than
    /// now (an mtime set ahead, which tmpfs and btrfs take up to Int64.max) is now: RFC 9110
    /// §8.8.2.1 has a future modification time replaced by the time of the answer, and the rule
    /// above adds a second to the last time served, which must stay far from overflowing.
    ///
    /// Opened with O_NONBLOCK and checked with fstat on the same descriptor: a FIFO or device put
    /// in the config directory is refused instead of blocking the reloader, and the time and the
    /// bytes are those of one file even when it is replaced meanwhile. A symbolic link is looked
    /// through without opening its target (`openChecked`): a link to a device is refused unopened.
    ///
    /// `rules`: what a site's file must be besides (`FileRules`), checked on the opened
    /// descriptor, so that no name swapped in between can escape the check.
    public static func readFile(path: String, limit: Int, rules: FileRules = FileRules()) -> Result<
        (bytes: [UInt8], modified: Int64), ReadError
    > {
        do throws(SystemError) {
            let fd: Int32
            let status: FileStatus
            switch try openChecked(path, rules) {
            case .refused(let reason): return .failure(ReadError(description: reason))
            case .opened(let opened, let openedStatus):
                fd = opened
                status = openedStatus
            }
            defer { Files.close(fd) }
            // Sized by fstat and read straight into the result: at 100,000 sites a zeroed 64 KB
            // chunk per file cost more than the reads. One byte beyond the size tells a file that
            // grew since fstat (read on in chunks) or one over the limit (never read past
            // `limit + 1`). A size of 0 is also what a kernel file reports (/proc, /sys, whose
            // sysctl values end at any read past offset 0): those are read in one full chunk.
            // The size is clamped before the `+ 1`: a sparse file can claim Int64.max bytes.
            let size = Int(clamping: min(Int64(limit), max(0, status.size)))
            var wanted = size > 0 ? size + 1 : min(limit + 1, readChunkSize)
            var bytes: [UInt8] = []
            while bytes.count <= limit {
                var failure: SystemError?
                let chunk = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, count in
                    do throws(SystemError) {
                        count = try Files.read(fd, into: UnsafeMutableRawBufferPointer(buffer))
                    } catch {
                        failure = error
                        count = 0
                    }
                }
                if let failure { throw failure }
                if chunk.isEmpty { break }
                if bytes.isEmpty { bytes = chunk } else { bytes += chunk }
                // Only a read of 0 bytes marks the end, since a network or FUSE filesystem may
                // give less than asked in the middle of a file. A short read that reaches the
                // size fstat gave is taken as the end too (it saves a read per file at 100,000
                // sites); a file that grew meanwhile fills the byte asked beyond it.
                if chunk.count < wanted && size > 0 && bytes.count >= size { break }
                wanted = min(readChunkSize, limit + 1 - bytes.count)
            }
            return .success((bytes, min(max(status.modified, status.changed), Int64(Glibc.time(nil)))))
        } catch {
            return .failure(ReadError(error))
        }
    }

    /// What `openChecked` gives: an open regular file, or why the path is refused.
    enum Checked {
        case opened(Int32, FileStatus)
        case refused(String)
    }

    /// Opens `path` for reading when it is a regular file that `rules` admit. The last component
    /// is first opened without following a symbolic link (a site's files are nearly always plain
    /// entries: one open); a link is then resolved without opening (O_PATH), its target's kind
    /// checked, and only a regular file is opened, through the resolved descriptor itself.
    static func openChecked(_ path: String, _ rules: FileRules) throws(SystemError) -> Checked {
        let fd: Int32
        let linked: Bool
        do {
            fd = try openNotFollowing(path, rules)
            linked = false
        } catch  where error.errno == ELOOP {
            // A link: followed from the open directory when it is one of its entries, so that
            // the file is that directory's whatever its path names by then.
            let location =
                if let directory = rules.directory, let offset = entryOffset(path, in: directory.path) {
                    try Files.openLocation(path, nameAt: offset, in: directory.descriptor)
                } else {
                    try Files.openLocation(path)
                }
            defer { Files.close(location) }
            if let refusal = kindRefusal(try Files.status(of: location).kind) { return .refused(refusal) }
            fd = try Files.reopenForReading(location)
            linked = true
        }
        do throws(SystemError) {
            let status = try Files.status(of: fd)
            // Two steps: `??` takes its right side as an autoclosure, which loses the typed throw.
            var refused = kindRefusal(status.kind)
            if refused == nil { refused = try refusal(of: fd, status, rules, linked: linked) }
            if let refused {
                Files.close(fd)
                return .refused(refused)
            }
            return .opened(fd, status)
        } catch {
            Files.close(fd)
            throw error
        }
    }

    /// Opens `path` without following a link as its last component: through the open directory
    /// when it is one of its entries (`FileRules.directory`), else by the path.
    static func openNotFollowing(_ path: String, _ rules: FileRules) throws(SystemError) -> Int32 {
        if let directory = rules.directory, let offset = entryOffset(path, in: directory.path) {
            return try Files.openForReadingNotFollowing(path, nameAt: offset, in: directory.descriptor)
        }
        return try Files.openForReadingNotFollowing(path)
    }

    /// Where the name begins in `path` (a UTF-8 byte offset) when `path` is one entry of the
    /// directory `directory`: the part `path(_:below:)` gives, not empty and without a `/`; else
    /// nil. Found in place with memcmp and memchr, no string made (a start asks it for every
    /// site's files; the generic byte walks of `starts(with:)` cost more than the allocations).
    static func entryOffset(_ path: String, in directory: String) -> Int? {
        var contiguous = false
        var found: Int?
        _ = path.utf8.withContiguousStorageIfAvailable { path in
            directory.utf8.withContiguousStorageIfAvailable { directory in
                contiguous = true
                found = entryOffset(path, in: directory)
            }
        }
        if contiguous { return found }
        // A string not stored as UTF-8 (bridged): the same answer, by `path(_:below:)`.
        guard let name = self.path(path, below: directory), !name.isEmpty, !name.utf8.contains(UInt8(ascii: "/")) else { return nil }
        return path.utf8.count - name.utf8.count
    }

    private static func entryOffset(_ path: UnsafeBufferPointer<UInt8>, in directory: UnsafeBufferPointer<UInt8>) -> Int? {
        let slash = UInt8(ascii: "/")
        let prefix = directory.count - (directory.last == slash ? 1 : 0)
        guard path.count > prefix + 1, path[prefix] == slash, let start = path.baseAddress else { return nil }
        if prefix > 0, let other = directory.baseAddress, memcmp(start, other, prefix) != 0 { return nil }
        guard memchr(start + prefix + 1, Int32(slash), path.count - prefix - 1) == nil else { return nil }
        return prefix + 1
    }

    static func kindRefusal(_ kind: FileStatus.Kind) -> String? {
        switch kind {
        case .regular: nil
        case .directory: "a directory, not a file"
        case .symbolicLink, .other: "not a regular file (a FIFO, socket or device)"
        }
    }

    /// Why `rules` refuse the file open at `fd`, or nil; `linked`: it was reached through a
    /// symbolic link. Nothing here quotes the file's bytes.
    static func refusal(of fd: Int32, _ status: FileStatus, _ rules: FileRules, linked: Bool) throws(SystemError) -> String? {
        if rules.singleName && status.links > 1 {
            return "has \(status.links) names (a hard link); a page must be a file of the site itself, with one name"
        }
        // A hard link to the ownership checks' key lies in the site's directory by every path
        // check; the key is the one file there with other names that is compared (one `stat`,
        // only for a file with several names). Other site files may have several names: `cp -al`
        // and `rsync --link-dest` deployments link unchanged files between copies.
        if status.links > 1, let root = rules.configRoot, let key = try? Files.status(root + "/" + verifyKeyPath),
            key.device == status.device, key.inode == status.inode
        {
            return "is the ownership checks' key (a hard link to \(verifyKeyPath)); a site's files are never read from there"
        }
        guard rules.siteDirectory != nil || rules.within != nil, linked || !rules.plainDirectory else { return nil }
        // Where the descriptor is, as the kernel says now: every symbolic link resolved.
        let opened = try Files.path(of: fd)
        if let within = rules.within, path(opened, below: (try? Files.realPath(within)) ?? within) == nil {
            // The path is quoted escaped: a directory name may hold a line break.
            return "leads outside the site's directory (to \(TerminalText.escaped(opened))); a page must be a file of the site itself"
        }
        if let site = rules.siteDirectory, lies(opened, inTLSOf: site, root: rules.configRoot) {
            return "leads into a tls/ directory, where keys are kept; a site's files are never read from there"
        }
        if let root = rules.configRoot, lies(opened, inVerifyOf: root) {
            return
                "leads into \(verifyDirectoryName)/, where the ownership checks' key and records are kept; a site's files are never read from there"
        }
        return nil
    }

    /// Whether the real path `opened` is inside a `tls/` directory: the site's own, the config
    /// root's, another site's under the root, or any directory named `tls` below the root or the
    /// site. The `tls/` folders may be symbolic links to directories named otherwise (a
    /// Kubernetes Secret volume), so their real paths are compared too. A site directory that is
    /// itself a link into a `tls/` folder (`sites/x.test -> y.test/tls`) is caught the same way.
    static func lies(_ opened: String, inTLSOf site: String, root: String?) -> Bool {
        // The common case costs no system call: the file is an entry of the site's directory,
        // which loadSite reads by its real path (the kernel's path would differ otherwise).
        if let slash = opened.utf8.lastIndex(of: UInt8(ascii: "/")), opened.utf8[..<slash].elementsEqual(site.utf8) {
            return false
        }
        let siteReal = (try? Files.realPath(site)) ?? site
        let rootReal = root.flatMap { try? Files.realPath($0) }
        // A folder named tls (any case: a case-insensitive filesystem opens TLS/ as tls/) between
        // the config root or the site and the file.
        for base in [rootReal, siteReal].compactMap({ $0 }) {
            guard let below = path(opened, below: base) else { continue }
            if below.split(separator: "/").dropLast().contains(where: { $0.utf8.count == 3 && $0.lowercased() == "tls" }) {
                return true
            }
        }
        var folders = [site + "/tls"]
        if let root, let rootReal {
            folders.append(root + "/tls")
            // Another site's tls/, which may lead elsewhere: the site directory the file is in.
            if let below = path(opened, below: rootReal + "/sites"), let other = below.split(separator: "/").first {
                folders.append(rootReal + "/sites/" + other + "/tls")
            }
        }
        return folders.contains { folder in
            guard let real = try? Files.realPath(folder) else { return false }
            return path(opened, below: real) != nil
        }
    }

    /// The ownership checks' directory at the config root (Sources/TenantAPI/VerificationStore.swift
    /// keeps its HMAC key and records there), and its key file.
    public static let verifyDirectoryName = ".aasad-verify"
    static let verifyKeyPath = verifyDirectoryName + "/key"

    /// Whether the real path `opened` is inside the config root's `.aasad-verify/` (by its real
    /// path: it may be a link to a shared volume), or any folder so named below the root (any
    /// case, as `tls` above).
    static func lies(_ opened: String, inVerifyOf root: String) -> Bool {
        guard let rootReal = try? Files.realPath(root) else { return false }
        if let below = path(opened, below: rootReal),
            below.split(separator: "/").dropLast().contains(where: { $0.lowercased() == verifyDirectoryName })
        {
            return true
        }
        guard let real = try? Files.realPath(root + "/" + verifyDirectoryName) else { return false }
        return path(opened, below: real) != nil
    }

    /// The part of `path` below the directory `directory` (without the `/` between), or nil when
    /// it is not below it. Compared as bytes: String comparison treats canonically equivalent
    /// Unicode as equal, and two such names are two different directories.
    static func path(_ path: String, below directory: String) -> Substring? {
        let prefix = directory.utf8.last == UInt8(ascii: "/") ? directory : directory + "/"
        guard path.utf8.starts(with: prefix.utf8) else { return nil }
        return Substring(path.utf8.dropFirst(prefix.utf8.count))
    }

    /// A site directory's names too long to be kept inline in a string, listed as these strings
    /// (`Files.entries(in:interned:)`): one allocation fewer a site.
    static let internedNames = [aasaFileName]

    /// Bytes read per call; a larger file takes several.
    static let readChunkSize = 64 * 1024

    static func describe(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
