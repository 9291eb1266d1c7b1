import CAASAOpenSSL
import Hashing
import Synchronization

/// Session ticket keys, rotating with overlap (h2o's `update_tickets`, Caddy's sessiontickets.go):
/// tickets are issued under the newest key; older keys still open tickets (which are then
/// renewed) until they age out. A stolen key therefore exposes only a few hours of sessions,
/// and a restart (new keys) costs clients one full handshake.
public final class TicketKeys: Sendable {
    /// A new key is made this often. Default: 1 h.
    public static let rotationInterval: Int64 = 3600
    /// Keys kept for decryption, newest first; tickets older than this many intervals need a full
    /// handshake. Default 3 (2 to 3 hours, beyond OpenSSL's 2 h ticket lifetime hint).
    public static let keysKept = 3

    struct Key {
        let name: [UInt8]
        let aes: [UInt8]
        let hmac: [UInt8]
        let created: Int64
    }

    private let keys = Mutex<[Key]>([])
    private let clock: @Sendable () -> Int64

    /// Keys on the system clock.
    public convenience init() {
        self.init(clock: { Int64(time(nil)) })
    }

    /// `clock` returns seconds; tests inject their own.
    public init(clock: @escaping @Sendable () -> Int64) {
        self.clock = clock
    }

    /// The key that new tickets use, rotating first when it is due.
    func current() -> Key {
        let now = clock()
        return keys.withLock { keys in
            if let newest = keys.first, now - newest.created < Self.rotationInterval { return newest }
            let key = Key(name: Self.random(16), aes: Self.random(32), hmac: Self.random(32), created: now)
            keys.insert(key, at: 0)
            if keys.count > Self.keysKept { keys.removeLast(keys.count - Self.keysKept) }
            return key
        }
    }

    /// The key with this name, and whether it is the newest (otherwise the ticket is renewed).
    func find(name: UnsafePointer<UInt8>) -> (Key, isNewest: Bool)? {
        _ = current()  // rotate on schedule even when no new ticket is issued
        return keys.withLock { keys in
            for (i, key) in keys.enumerated() where key.name.withUnsafeBufferPointer({ memcmp($0.baseAddress!, name, 16) == 0 }) {
                return (key, i == 0)
            }
            return nil
        }
    }

    /// The keys as bytes, for the process an in-place upgrade starts (so that clients resume
    /// across it): per key, newest first, its name (16), AES key (32), HMAC key (32) and
    /// creation time (8, big-endian).
    public func exported() -> [UInt8] {
        _ = current()
        return keys.withLock { keys in
            var bytes: [UInt8] = []
            for key in keys {
                bytes += key.name + key.aes + key.hmac
                bytes += withUnsafeBytes(of: UInt64(bitPattern: key.created).bigEndian, Array.init)
            }
            return bytes
        }
    }

    /// Bytes of one exported key.
    public static let exportedKeySize = 16 + 32 + 32 + 8

    /// Takes the keys of the process this one replaces (`exported`), in place of its own: a
    /// ticket issued before the upgrade resumes after it, and rotation goes on from the old
    /// schedule. A creation time in the future counts as now (rotation must not stop), and keys
    /// too old to be kept are dropped. Refused (false, nothing changed) unless the bytes are
    /// whole keys, at most `keysKept` of them, and one at least is young enough.
    @discardableResult
    public func adopt(_ bytes: [UInt8]) -> Bool {
        let size = Self.exportedKeySize
        guard !bytes.isEmpty, bytes.count % size == 0, bytes.count / size <= Self.keysKept else { return false }
        let now = clock()
        let oldest = now - Int64(Self.keysKept) * Self.rotationInterval
        var adopted: [Key] = []
        for start in stride(from: 0, to: bytes.count, by: size) {
            let key = Array(bytes[start..<(start + size)])
            let created = Int64(bitPattern: key[80..<88].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            guard created > oldest else { continue }
            adopted.append(Key(name: Array(key[0..<16]), aes: Array(key[16..<48]), hmac: Array(key[48..<80]), created: min(created, now)))
        }
        guard !adopted.isEmpty else { return false }
        keys.withLock { $0 = adopted }
        return true
    }

    /// Key names currently held, newest first (for tests).
    public var names: [[UInt8]] { keys.withLock { $0.map(\.name) } }

    private static func random(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "no randomness for session ticket keys")
        return bytes
    }

    /// The keys every context of this process uses.
    public static let shared = TicketKeys()

    /// Sets the HMAC key and digest of a ticket's MAC. The key is SHA-256(shared HMAC key ‖
    /// `binding`), the certificate's session binding (`TLSContext.sessionContext`): a ticket issued
    /// under one certificate fails its MAC under another, which OpenSSL treats as an unknown ticket
    /// (a full handshake). The parameter names and the digest name are static strings: an
    /// OSSL_PARAM keeps pointers to them until it is used, so bridged temporaries would dangle.
    static func setMAC(_ hctx: OpaquePointer, _ key: Key, binding: [UInt8]) -> Bool {
        var hmac = Digest.sha256(key.hmac + binding)
        return hmac.withUnsafeMutableBytes { k in
            var params = [
                OSSL_PARAM_construct_octet_string(cString(keyParameter), k.baseAddress, k.count),
                OSSL_PARAM_construct_utf8_string(cString(digestParameter), UnsafeMutablePointer(mutating: cString(digestName)), 0),
                OSSL_PARAM_construct_end(),
            ]
            return EVP_MAC_CTX_set_params(hctx, &params) == 1
        }
    }

    private static let keyParameter: StaticString = "key"
    private static let digestParameter: StaticString = "digest"
    private static let digestName: StaticString = "SHA256"

    private static func cString(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// OpenSSL's ticket key callback (SSL_CTX_set_tlsext_ticket_key_evp_cb): AES-256-CBC and
/// HMAC-SHA256 under the shared rotating keys. Returns, when encrypting, 1 (done) or -1; when
/// decrypting, 0 (unknown key: full handshake), 1 (done) or 2 (done, issue a fresh ticket).
let ticketKeyCallback:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, OpaquePointer?, OpaquePointer?, Int32
    ) -> Int32 = { ssl, name, iv, cipher, hmac, encrypt in
        // The connection owns its SSL, and this runs inside one of its SSL calls.
        guard let ssl, let name, let iv, let cipher, let hmac, let connection = TLSConnection.of(ssl) else { return -1 }
        // The context chosen in the ClientHello callback, before any ticket is opened.
        let binding = connection.presentedContext.sessionContext
        let keys = TicketKeys.shared
        if encrypt == 1 {
            let key = keys.current()
            guard RAND_bytes(iv, 16) == 1 else { return -1 }
            key.name.withUnsafeBufferPointer { _ = memcpy(name, $0.baseAddress!, 16) }
            guard EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nil, key.aes, iv) == 1, TicketKeys.setMAC(hmac, key, binding: binding)
            else {
                return -1
            }
            return 1
        }
        guard let (key, isNewest) = keys.find(name: name) else { return 0 }
        guard TicketKeys.setMAC(hmac, key, binding: binding), EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nil, key.aes, iv) == 1 else {
            return -1
        }
        return isNewest ? 1 : 2
    }
