import CAASAOpenSSL
import Glibc
import HTTPCore
import Reactor

/// Writes a file so that a reader (another replica, the server's watcher) sees the old bytes or
/// the new ones, never a part: a temporary file in the same directory, written, fsynced, renamed
/// over the target, and the directory fsynced so the rename survives a crash (the pattern of
/// rename(2)'s atomicity guarantee; the same as certificates written by certbot and Caddy).
public enum AtomicFile {
    /// `Files.replaceAtomically`, its error said as storage's.
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32) throws(ACMEError) {
        do {
            try Files.replaceAtomically(path, with: bytes, mode: mode)
        } catch {
            throw .storage("cannot write \(path): \(error.reason)")
        }
    }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// `count` random bytes from OpenSSL's CSPRNG as hex: unique names and lock owner tokens.
func randomHex(_ count: Int) -> String {
    var bytes = [UInt8](repeating: 0, count: count)
    if RAND_bytes(&bytes, Int32(count)) != 1 {
        // The CSPRNG failing is not recoverable here; SystemRandomNumberGenerator still gives
        // unique names.
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = generator.next() }
    }
    return Hex.string(bytes)
}
