import CAASAOpenSSL
import Glibc
public import Reactor

/// The verdicts' file under the state directory (`validated-contents`, KnownValid.swift says what
/// it holds), and the binary identity that heads it: the reading and writing of the file, apart
/// from its format so that the `verdicts` fuzz target (scripts/fuzz.sh) builds the format alone.
extension KnownValid {
    /// A file larger than this is not read: two keys a site at 1,000,000 sites is 140 MB, far
    /// beyond what any real state holds; a larger file is not ours.
    static let maximumFileSize = 256 << 20

    /// Reads the verdicts stored at `path` for the binary `identity`; empty when the file is
    /// missing, from another binary, damaged, or too large.
    public static func load(path: String, identity: String) -> KnownValid {
        guard case .success(let bytes) = ConfigLoader.readBounded(path: path, limit: maximumFileSize), bytes.count <= maximumFileSize
        else { return KnownValid() }
        return parse(bytes, identity: identity)
    }

    /// Writes the verdicts to `path`: a new file, synced, then renamed over the old, so that a
    /// crash leaves one or the other whole.
    public func store(path: String, identity: String) throws(SystemError) {
        try Files.replaceAtomically(path, with: fileBytes(identity: identity), mode: 0o600)
    }

    /// The running binary's identity: its size, modification time and inode, so that a rebuilt
    /// or replaced binary (whose validators may differ) never trusts an older one's verdicts; and
    /// the OpenSSL it runs with and that library's configuration file, since a certificate's
    /// verdict is OpenSSL's (a new version or security level may refuse what an old one took).
    public static func binaryIdentity(path: String = "/proc/self/exe") -> String? {
        func file(_ path: String) -> String? {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return "\(info.st_size)-\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)-\(info.st_ino)"
        }
        guard let binary = file(path) else { return nil }
        let openSSL = String(cString: OpenSSL_version(OPENSSL_VERSION)).filter { $0 != "\n" && $0 != " " }
        var configuration = "no-openssl.cnf"
        if let name = CONF_get1_default_config_file() {
            configuration = file(String(cString: name)) ?? configuration
            CRYPTO_free(name, nil, 0)
        }
        return "\(binary) \(openSSL) \(configuration)"
    }
}
