import Synchronization

/// Replay nonces (RFC 8555 §6.5) kept from responses, so most requests need no extra newNonce
/// round trip. Each nonce is used once. Bounded: a CA hands one out per response, and more than
/// `capacity` unused ones only means older ones expire at the CA first.
public final class NoncePool: Sendable {
    /// Most nonces kept: the client makes one request at a time, so a handful is plenty; the
    /// oldest are dropped first (the CA expires old nonces first, too).
    public static let capacity = 16
    private let nonces = Mutex<[String]>([])

    public init() {}

    /// Keeps a nonce from a response's Replay-Nonce field.
    public func add(_ nonce: String?) {
        guard let nonce else { return }
        nonces.withLock {
            $0.append(nonce)
            if $0.count > Self.capacity { $0.removeFirst($0.count - Self.capacity) }
        }
    }

    /// The newest unused nonce, or nil (fetch one from newNonce).
    public func take() -> String? { nonces.withLock { $0.popLast() } }

    public var count: Int { nonces.withLock { $0.count } }
}
