import Glibc
import HTTPCore
import Hashing
import Reactor
import SafeText

/// The storage directory that every aasad process of one deployment shares (`acme.storage`):
///
/// ```text
/// <storage>/accounts/<CA>.pem              the account key for one CA directory (0600)
/// <storage>/certificates/<name>.pem        chain (leaf first) then the leaf's key, one file (0600)
/// <storage>/challenges/http-01/<token>     the key authorization the CA will fetch
/// <storage>/challenges/tls-alpn-01/<name>.pem   the RFC 8737 certificate and key
/// <storage>/locks/<name>.lock              StorageLock's files
/// <storage>/orders.log                     one line per order placed: the shared order budget
/// <storage>/backoff/<name>                 a failed order's back-off (ReplicaRecords)
/// <storage>/demand/<name>                  a name someone asked a replica for (ReplicaRecords)
/// <storage>/replicas/<id>                  a replica and its looks at the challenges (ReplicaPresence)
/// ```
///
/// A certificate and its key live in one file so that one rename(2) replaces both: a replica
/// reading while another writes sees the old pair or the new one, never a chain with the wrong
/// key. Names in paths are checked host names (`StorageName`), never caller-chosen paths; a
/// name too long for a file name with what is added to it is written digested.
public struct ACMEStorage: Sendable {
    public let root: String

    /// Largest certificate file read: a chain of a few certificates and a key is under 10 KB.
    public static let maximumCertificateFileBytes = 256 * 1024
    /// Largest challenge file read: a key authorization is about 90 bytes, a challenge
    /// certificate and key under 2 KB.
    public static let maximumChallengeFileBytes = 16 * 1024
    /// Largest token accepted as a file name: RFC 8555 §8.1 asks for at least 128 bits of
    /// entropy in base64url (22 characters); CAs send 43. Anything longer is not a token.
    public static let maximumTokenLength = 128

    /// `create: false` reads what is there (`aasad sites`) without making any directory.
    public init(root: String, create: Bool = true) throws(ACMEError) {
        self.root = root
        guard create else { return }
        for directory in [
            root, root + "/accounts", root + "/certificates", root + "/challenges", root + "/challenges/http-01",
            root + "/challenges/tls-alpn-01", root + "/locks", root + "/children", root + "/backoff", root + "/demand", root + "/replicas",
        ] {
            do {
                try Files.makeDirectory(directory, mode: 0o700)
            } catch {
                throw .storage("cannot create \(directory): \(error.reason)")
            }
        }
    }

    /// Every directory of the layout, parents first.
    public var directories: [String] {
        [
            root, root + "/accounts", root + "/certificates", root + "/challenges", root + "/challenges/http-01",
            root + "/challenges/tls-alpn-01", root + "/locks", root + "/children", root + "/backoff", root + "/demand", root + "/replicas",
        ]
    }

    public var locks: String { root + "/locks" }
    public var orderLog: String { root + "/orders.log" }

    /// The longest CA host in an account key's file name: with `-`, 16 hex digits and `.pem`,
    /// the new key's `.new-` and 16 hex digits, and the write's `.` `.tmp-` and 16 hex digits, the
    /// file names stay within `StorageName.maximumFileNameBytes`. A longer host is cut (the
    /// digest still tells every URL apart).
    static let maximumAccountHostBytes = StorageName.maximumFileNameBytes - 64

    /// The account key file for a CA directory: its host and a digest of the whole URL, so two
    /// CAs (or staging and production) never share a key file by accident.
    public func accountKeyPath(for directory: ACMEURL) -> String {
        let afterScheme = directory.text.utf8.dropFirst("https://".utf8.count)
        let host = String(decoding: afterScheme.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") }, as: UTF8.self)
            .lowercased().filter { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "." || $0 == "-" }
        let digest = Hex.string(Digest.sha256(directory.text.utf8).prefix(8))
        let kept = String(decoding: host.utf8.prefix(Self.maximumAccountHostBytes), as: UTF8.self)
        return root + "/accounts/" + (host.isEmpty ? "ca" : kept) + "-" + digest + ".pem"
    }

    public func certificatePath(for name: String) throws(ACMEError) -> String {
        root + "/certificates/" + (try StorageName.component(name)) + ".pem"
    }

    public func tlsALPNChallengePath(for name: String) throws(ACMEError) -> String {
        tlsALPNChallengePath(component: try StorageName.component(name))
    }

    /// The challenge file of a checked `StorageName` component.
    func tlsALPNChallengePath(component: String) -> String { root + "/challenges/tls-alpn-01/" + component + ".pem" }

    /// The HTTP-01 answer file of a token; nil when the token is not base64url (RFC 8555 §8.1),
    /// so that no request path can name another file.
    public func http01Path(for token: String) -> String? {
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maximumTokenLength, Base64URL.isAlphabet(bytes) else { return nil }
        return root + "/challenges/http-01/" + token
    }

    /// The account key for `directory`, made once and shared: a new key is linked into place, so
    /// two replicas starting together end up with the one that got there first.
    public func accountKey(for directory: ACMEURL) throws(ACMEError) -> AccountKey {
        let path = accountKeyPath(for: directory)
        if let bytes = try read(path, limit: Self.maximumChallengeFileBytes) { return try AccountKey(pem: bytes) }
        let key = try AccountKey.generate()
        let temporary = path + ".new-" + randomHex(8)
        try AtomicFile.write(try key.pem(), to: temporary, mode: 0o600)
        defer { try? Files.remove(temporary) }
        do {
            try Files.link(temporary, to: path)
        } catch  where error.errno == EEXIST {
            // Another replica made one first: use it.
        } catch {
            throw .storage("cannot store the account key at \(path): \(error.reason)")
        }
        guard let stored = try read(path, limit: Self.maximumChallengeFileBytes) else {
            throw .storage("the account key at \(path) vanished")
        }
        return try AccountKey(pem: stored)
    }

    /// Stores an issued chain and its key for `name`, replacing what was there in one step.
    public func storeCertificate(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) throws(ACMEError) {
        try AtomicFile.write(Self.bundle(chainPEM: chainPEM, keyPEM: keyPEM), to: try certificatePath(for: name), mode: 0o600)
    }

    /// A stored certificate file: its bytes and the stat that identifies this version of it.
    public struct StoredFile: Sendable, Equatable {
        public var bytes: [UInt8]
        public var version: FileVersion
    }

    /// What tells one version of a file from the next: a rename gives a new inode.
    public struct FileVersion: Sendable, Equatable {
        public var inode: UInt64
        public var modified: Int64
        public var size: Int64

        init(_ status: FileStatus) {
            inode = status.inode
            modified = status.modifiedNanoseconds
            size = status.size
        }
    }

    /// The version of `name`'s certificate file, or nil when there is none.
    public func certificateVersion(for name: String) throws(ACMEError) -> FileVersion? {
        let path = try certificatePath(for: name)
        do {
            let status = try Files.status(path)
            guard status.kind == .regular else { return nil }
            return FileVersion(status)
        } catch  where error.isNoSuchFile {
            return nil
        } catch {
            throw .storage("cannot stat \(path): \(error.reason)")
        }
    }

    /// `name`'s stored certificate file, or nil when there is none.
    public func certificate(for name: String) throws(ACMEError) -> StoredFile? {
        let path = try certificatePath(for: name)
        let fd: Int32
        do {
            fd = try Files.openForReading(path)
        } catch  where error.isNoSuchFile {
            return nil
        } catch {
            throw .storage("cannot open \(path): \(error.reason)")
        }
        defer { Files.close(fd) }
        do {
            // The version of the bytes read: stat through the same descriptor.
            let status = try Files.status(of: fd)
            let bytes = try Files.readAll(fd, limit: Self.maximumCertificateFileBytes)
            return StoredFile(bytes: bytes, version: FileVersion(status))
        } catch {
            throw .storage("cannot read \(path): \(error.reason)")
        }
    }

    /// One file of a chain and its key (what `split` reads back): the chain, a line break if it
    /// lacks one, the key.
    static func bundle(chainPEM: [UInt8], keyPEM: [UInt8]) -> [UInt8] {
        var bundle = chainPEM
        if bundle.last != 0x0A { bundle.append(0x0A) }
        return bundle + keyPEM
    }

    /// The identity the TLS layer caches a pair's context by: a digest of its bytes, so new
    /// bytes always get a new context.
    static func identity(chainPEM: [UInt8], keyPEM: [UInt8]) -> String { Hex.string(Digest.sha256(chainPEM + [0] + keyPEM)) }

    /// Splits a stored file into the chain (every CERTIFICATE block, in order) and the key (the
    /// one private-key block); nil when either is missing or there is more than one key.
    public static func split(_ bundle: [UInt8]) -> (chainPEM: [UInt8], keyPEM: [UInt8])? {
        var chain: [UInt8] = []
        var key: [UInt8]?
        for block in PEMBlocks(bundle) {
            if block.label == "CERTIFICATE" {
                chain += block.bytes
            } else if block.label.hasSuffix("PRIVATE KEY") {
                guard key == nil else { return nil }
                key = block.bytes
            }
        }
        guard !chain.isEmpty, let key else { return nil }
        return (chain, key)
    }

    // MARK: - Challenge answers

    public func storeHTTP01(token: String, keyAuthorization: String) throws(ACMEError) {
        guard let path = http01Path(for: token) else { throw .malformed(what: "challenge", reason: "the token is not base64url") }
        try AtomicFile.write(Array(keyAuthorization.utf8), to: path, mode: 0o644)
    }

    public func removeHTTP01(token: String) {
        guard let path = http01Path(for: token) else { return }
        try? Files.remove(path)
    }

    /// The key authorization stored for `token`, or nil.
    public func http01Answer(token: String) -> [UInt8]? {
        guard let path = http01Path(for: token) else { return nil }
        return try? read(path, limit: Self.maximumChallengeFileBytes)
    }

    public func storeTLSALPNChallenge(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) throws(ACMEError) {
        try AtomicFile.write(Self.bundle(chainPEM: chainPEM, keyPEM: keyPEM), to: try tlsALPNChallengePath(for: name), mode: 0o600)
    }

    public func removeTLSALPNChallenge(name: String) {
        guard let path = try? tlsALPNChallengePath(for: name) else { return }
        try? Files.remove(path)
    }

    /// The challenge certificate and key stored for `name`, or nil.
    public func tlsALPNChallenge(for name: String) -> (chainPEM: [UInt8], keyPEM: [UInt8])? {
        guard let path = try? tlsALPNChallengePath(for: name) else { return nil }
        return tlsALPNChallenge(path: path)
    }

    func tlsALPNChallenge(path: String) -> (chainPEM: [UInt8], keyPEM: [UInt8])? {
        guard let bytes = try? read(path, limit: Self.maximumChallengeFileBytes) else { return nil }
        return Self.split(bytes)
    }

    /// A whole file, nil when it is not there; larger than `limit` is an error.
    func read(_ path: String, limit: Int) throws(ACMEError) -> [UInt8]? {
        do {
            return try Files.readFile(path, limit: limit)
        } catch  where error.isNoSuchFile {
            return nil
        } catch {
            throw .storage("cannot read \(path): \(error.reason)")
        }
    }
}

/// Names as they appear in storage paths: a lower-case host name (letters, digits, `-`, `.`,
/// `_`), or a wildcard `*.suffix` with `*` written `_wildcard_`; never anything that could climb
/// out of its directory.
///
/// Every file named after a host name (a certificate, a challenge answer, a lock, a record)
/// must fit in Linux's 255-byte file name with what the storage adds to it: `.pem`, a lock's
/// `.lock.release-` and 16 hex digits, a write's `.` and `.tmp-` and 16 hex digits. A name up to
/// `maximumComponentBytes` is written as it reads (as earlier versions wrote it); a longer one
/// (DNS allows 253 bytes) as the first bytes of that form, `~`, and the SHA-256 of the whole
/// form in hex, `maximumComponentBytes` long. `~` is no host name's byte, so the digested form
/// of one name is never the readable form of another; every replica of one version derives the
/// same file from the same name (docs/acme.md, "Storage").
public enum StorageName {
    /// Linux's longest file name (NAME_MAX).
    public static let maximumFileNameBytes = 255
    /// The longest addition the storage makes to a component: `.lock.release-` and 16 hex digits
    /// (StorageLock's release; its takeover's `.lock.stale-` and a write's `.` `.pem` `.tmp-` are
    /// shorter).
    public static let longestAddition = ".lock.release-".utf8.count + 16
    /// The longest component: 225 bytes.
    public static let maximumComponentBytes = maximumFileNameBytes - longestAddition

    /// The component `name` is stored under (Hashing's `FittedName` once it is too long).
    public static func component(_ name: String) throws(ACMEError) -> String {
        FittedName.component(try readableComponent(name), maximumBytes: maximumComponentBytes)
    }

    /// Whether `entry` (a directory entry without its `.pem`) is a digested component: a host
    /// name's first bytes, `~`, 64 lower-case hex digits, `maximumComponentBytes` in all.
    public static func isDigested(_ entry: String) -> Bool {
        FittedName.isDigested(entry, maximumBytes: maximumComponentBytes, isNameByte: isNameByte)
    }

    /// The host name a readable component stands for (`_wildcard_.` spelling a wildcard), or nil
    /// when `entry` is not the readable component of a name (a digested one included).
    public static func name(ofReadable entry: String) -> String? {
        let name = entry.hasPrefix("_wildcard_.") ? "*." + entry.dropFirst("_wildcard_.".count) : entry
        return (try? readableComponent(name)) == entry && entry.utf8.count <= maximumComponentBytes ? name : nil
    }

    private static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x2A
    }

    private static func readableComponent(_ name: String) throws(ACMEError) -> String {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= ACMELimits.maximumNameLength, bytes.first != UInt8(ascii: "."), bytes.allSatisfy(isNameByte)
        else { throw .storage("\(ACMEProblem.clean(name)) is not a lower-case host name to store") }
        // `*` only as a wildcard's first label, and no name that spells the wildcard itself:
        // `*.a.test` and `_wildcard_.a.test` must never share a file.
        let rest = name.hasPrefix("*.") ? name.dropFirst(2) : Substring(name)
        guard !rest.contains("*"), !rest.contains("_wildcard_") else {
            throw .storage("\(ACMEProblem.clean(name)) is not a lower-case host name to store")
        }
        return name.hasPrefix("*.") ? "_wildcard_." + rest : name
    }
}

/// The `-----BEGIN X-----` … `-----END X-----` blocks of a PEM file, each with its label and its
/// bytes (lines included, with a final newline). Text outside blocks is skipped.
struct PEMBlocks: Sequence, IteratorProtocol {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    struct Block {
        var label: String
        var bytes: [UInt8]
    }

    private static let begin = Array("-----BEGIN ".utf8)
    private static let end = Array("-----END ".utf8)
    private static let dashes = Array("-----".utf8)

    mutating func next() -> Block? {
        while let start = find(Self.begin, from: position) {
            let labelStart = start + Self.begin.count
            guard let labelEnd = find(Self.dashes, from: labelStart) else { return nil }
            let label = Array(bytes[labelStart..<labelEnd])
            let closing = Self.end + label + Self.dashes
            guard let close = find(closing, from: labelEnd) else { return nil }
            position = close + closing.count
            var block = Array(bytes[start..<position])
            block.append(0x0A)
            return Block(label: String(decoding: label, as: UTF8.self), bytes: block)
        }
        return nil
    }

    private func find(_ needle: [UInt8], from: Int) -> Int? { CertificateChain.find(needle, in: bytes, from: from) }
}
