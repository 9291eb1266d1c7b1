import Foundation
public import Reactor

/// Reading the config directory's files: bounded, never blocking, and telling "gone" apart
/// from "cannot be read now" (issue 10).
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
        /// only a file that is gone stops being served (issue 10).
        public var isMissing: Bool { system?.isNoSuchFile ?? false }
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
    ///
    /// `within`: a directory's real path (`Files.realPath`) the file must be in once every
    /// symbolic link is resolved, checked on the opened descriptor (no name swapped in between
    /// can escape it). For files served as they are, whatever they hold (a site's page): a
    /// symlink to a key or to `/proc/self/environ` would otherwise publish it.
    public static func readFile(path: String, limit: Int, within: String? = nil) -> Result<(bytes: [UInt8], modified: Int64), ReadError> {
        do throws(SystemError) {
            let fd = try Files.openForReading(path)
            defer { Files.close(fd) }
            if let within {
                let opened = try Files.path(of: fd)
                guard opened.hasPrefix(within.hasSuffix("/") ? within : within + "/") else {
                    return .failure(
                        ReadError(
                            description: "leads outside the site's directory (to \(opened)); a page must be a file of the site itself"))
                }
            }
            let status = try Files.status(of: fd)
            switch status.kind {
            case .regular: break
            case .directory: return .failure(ReadError(description: "a directory, not a file"))
            case .symbolicLink, .other: return .failure(ReadError(description: "not a regular file"))
            }
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
            return .success((bytes, max(status.modified, status.changed)))
        } catch {
            return .failure(ReadError(error))
        }
    }

    /// Bytes read per call; a larger file takes several.
    static let readChunkSize = 64 * 1024

    static func describe(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
