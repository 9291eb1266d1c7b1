import HTTPCore
import Synchronization

/// An admin answer made on another thread: a page that takes seconds to build (`/sites` at
/// 100,000 sites) is rendered off the admin worker's thread, which meanwhile answers the probes
/// and scrapes of every other connection. The connection that asked reads nothing more until
/// the answer is given (its pipelined requests wait behind it, in order); then the worker, woken,
/// sends it (docs/architecture.md, "The admin listener").
public final class PendingAnswer: Sendable {
    private struct State {
        var answer: AdminEndpoint.Answer?
        /// Called once when the answer is given: the waiting workers' wake-ups.
        var wakes: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())
    private let gone = Atomic<Bool>(false)

    public init() {}

    /// Whether the connection that waited for this answer has closed (its client hung up or timed
    /// out): nobody will send it, and its place among the waiting may be given to another.
    public var abandoned: Bool { gone.load(ordering: .relaxed) }

    /// The waiting connection closed.
    package func abandon() { gone.store(true, ordering: .relaxed) }

    /// Gives the answer; the first one given is kept.
    public func fulfil(_ answer: AdminEndpoint.Answer) {
        let wakes = state.withLock { state -> [@Sendable () -> Void] in
            guard state.answer == nil else { return [] }
            state.answer = answer
            defer { state.wakes = [] }
            return state.wakes
        }
        for wake in wakes { wake() }
    }

    /// The answer, once given.
    public var answer: AdminEndpoint.Answer? { state.withLock { $0.answer } }

    /// Calls `wake` once the answer is given (now, if it already is).
    func whenAnswered(_ wake: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.answer != nil { return true }
            state.wakes.append(wake)
            return false
        }
        if now { wake() }
    }
}

extension AdminEndpoint {
    /// What a page handler gives: the answer now, or one a `PendingAnswer` gives later.
    public enum Reply: Sendable {
        case now(Answer)
        case later(PendingAnswer)
    }

    /// A request waiting for a `PendingAnswer`: what it needs to be framed once given.
    struct Deferred {
        let pending: PendingAnswer
        let method: Method
    }

    /// The response to a deferred request once its answer is given; nil until then.
    func resolve(_ deferred: Deferred) -> Response? {
        guard let answer = deferred.pending.answer else { return nil }
        return frame(answer, for: deferred.method).answering(deferred.method)
    }
}

/// The bytes of answers the admin worker's connections have not sent yet (their clients have not
/// read them), kept by the worker: a large page is refused with 503 while others wait unread, so
/// clients that ask for `/sites` and never read cannot make the server hold a copy each.
public final class AdminOutput: Sendable {
    private let bytes = Atomic<Int>(0)
    /// Bodies several connections send from one storage (the answers of one render), by the
    /// storage's address: counted in `bytes` once, while any connection holds one unsent.
    private let shared = Mutex<[UInt: (holders: Int, size: Int)]>([:])

    /// Unsent bytes over which a large answer is refused, by default. One answer of any size is
    /// always taken when nothing else waits (a page larger than this is still served, one at a time).
    public static let maximumHeld = 64 * 1024 * 1024
    /// Answers smaller than this are never refused: probes, `/metrics`, error pages.
    public static let smallAnswer = 1024 * 1024
    /// This count's bound (`maximumHeld` but in tests).
    public let bound: Int

    public init(bound: Int = AdminOutput.maximumHeld) {
        self.bound = bound
    }

    /// Unsent bytes now.
    public var held: Int { bytes.load(ordering: .relaxed) }

    func add(_ delta: Int) {
        bytes.add(delta, ordering: .relaxed)
    }

    /// The identity of a body's storage.
    static func key(_ body: [UInt8]) -> UInt { body.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }

    /// A connection holds `body` unsent (`ConnectionMachine.sharedBody`).
    func share(_ body: [UInt8]) {
        let first = shared.withLock { shared -> Bool in
            let key = Self.key(body)
            shared[key, default: (0, body.count)].holders += 1
            return shared[key]!.holders == 1
        }
        if first { add(body.count) }
    }

    /// A connection no longer holds the body `key` names.
    func unshare(_ key: UInt) {
        let freed = shared.withLock { shared -> Int in
            guard var entry = shared[key] else { return 0 }
            entry.holders -= 1
            shared[key] = entry.holders > 0 ? entry : nil
            return entry.holders > 0 ? 0 : entry.size
        }
        add(-freed)
    }

    /// Whether the body is one some connection holds already: another answer of it adds no bytes.
    func holds(_ body: [UInt8]) -> Bool {
        let key = Self.key(body)
        return shared.withLock { $0[key] != nil }
    }

    /// Whether an answer of `size` bytes may be queued now.
    func admits(_ size: Int) -> Bool {
        let held = held
        return size < Self.smallAnswer || held == 0 || held + size <= bound
    }

    /// What one connection has counted here, kept with its state (`ConnectionMachine.account`).
    struct Account {
        /// Unsent bytes of its own.
        var held = 0
        /// The shared body it holds unsent (`share`), by its storage's identity.
        var shared: UInt?
    }

    /// Brings the count in line with a connection's unsent output: `own` bytes of its own, and
    /// `shared` held from a storage others may hold too (nil: none).
    func settle(_ account: inout Account, own: Int, shared: [UInt8]?) {
        if own != account.held {
            add(own - account.held)
            account.held = own
        }
        let key = shared.map(Self.key)
        if key != account.shared {
            if let old = account.shared { unshare(old) }
            if let shared { share(shared) }
            account.shared = key
        }
    }
}

extension ConnectionMachine {
    /// Brings the admin worker's count (`AdminOutput`) in line with this connection's unsent
    /// output: after each of its steps, before each of its requests is answered (what the step
    /// wrote so far counts no longer: a page the client read whole is not held against its next
    /// ask), and at its close (`closing`: nothing counts).
    mutating func settle(_ output: AdminOutput, closing: Bool = false) {
        let own = closing ? 0 : unsharedPending
        let shared = closing ? nil : sharedBody
        output.settle(&account, own: own, shared: shared)
    }
}
