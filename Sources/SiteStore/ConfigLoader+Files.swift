import Foundation
import Glibc

/// Reading the config directory's files: bounded, never blocking, and telling "gone" apart
/// from "cannot be read now" (issue 10).
extension ConfigLoader {
    /// The errors that mean "nothing by that name": the only ones that make a file count as
    /// deleted. Any other (EACCES after `--user`, EMFILE, EIO) leaves the last good version.
    static func isMissing(_ code: Int32) -> Bool { code == ENOENT || code == ENOTDIR }

    /// Why a file could not be read.
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// The errno of the call that failed, when one did.
        public var code: Int32?

        public init(description: String, code: Int32? = nil) {
            self.description = description
            self.code = code
        }

        /// ENOENT or ENOTDIR: there is no such file, so whatever it was is gone. Every other
        /// error (EACCES, EMFILE, EIO, a directory where a file should be) leaves it in place.
        public var isMissing: Bool { code.map(ConfigLoader.isMissing) ?? false }
    }

    /// Reads up to `limit + 1` bytes of a file: one byte more than allowed tells "too large" apart
    /// from "exactly at the limit" without reading a huge file.
    public static func readBounded(path: String, limit: Int) -> Result<[UInt8], ReadError> {
        readFile(path: path, limit: limit).map(\.bytes)
    }

    /// Reads up to `limit + 1` bytes of a regular file, with its time.
    ///
    /// The time is the later of the file's mtime and ctime (whole seconds), so that it moves
    /// whenever the file is replaced: `rsync -a`, `cp -p` and `touch -d` can set an mtime back
    /// (a roll-back to an older version), but not the ctime, which the kernel sets to now on
    /// every write, rename into place or attribute change. Last-Modified is built on it (with
    /// SiteRegistry's rule that a new content never gets an earlier or equal one), so a client's
    /// If-Modified-Since never matches a changed file (RFC 9110 §13.1.3). A chmod moves the
    /// ctime too; SiteRegistry keeps the Last-Modified of unchanged content.
    ///
    /// Opened with O_NONBLOCK and checked with fstat on the same descriptor: a FIFO or device put
    /// in the config directory is refused instead of blocking the reloader, and the time and the
    /// bytes are those of one file even when it is replaced meanwhile.
    public static func readFile(path: String, limit: Int) -> Result<(bytes: [UInt8], modified: Int64), ReadError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            return .failure(ReadError(description: errorName(code), code: code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            return .failure(ReadError(description: errorName(code), code: code))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .failure(ReadError(description: "a directory, not a file"))
        default: return .failure(ReadError(description: "not a regular file"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                return .failure(ReadError(description: errorName(code), code: code))
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return .success((bytes, max(Int64(info.st_mtim.tv_sec), Int64(info.st_ctim.tv_sec))))
    }

    /// `permission denied (EACCES)`: the system's words and the name to search for.
    static func errorName(_ code: Int32) -> String {
        let names: [Int32: String] = [
            EACCES: "EACCES", EPERM: "EPERM", EMFILE: "EMFILE", ENFILE: "ENFILE", EIO: "EIO", ENOENT: "ENOENT", ENOTDIR: "ENOTDIR",
            ELOOP: "ELOOP", ENAMETOOLONG: "ENAMETOOLONG", ENOMEM: "ENOMEM", EISDIR: "EISDIR",
        ]
        let text = String(cString: strerror(code))
        let lowered = text.prefix(1).lowercased() + text.dropFirst()
        return lowered + " (\(names[code] ?? "errno \(code)"))"
    }

    static func describe(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
