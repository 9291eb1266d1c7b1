import CAASALinux
import CAASAOpenSSL
import Foundation
public import Logging
import Outbound
import Served
import Synchronization

/// The ownership checker (docs/api.md, "Ownership check"; docs/threat-model.md): on a thread of
/// its own, it fetches `http://<name>[:port]/.well-known/aasad-verify/<token>` for each name
/// with an unverified record that is due, and marks the name verified when the answer is this
/// deployment's HMAC for that name and token. The tenant steers the request (it owns the name's
/// DNS), so: the path is fixed, the address is resolved here and refused when link-local,
/// unspecified, multicast or a cloud metadata address (`refusal(of:)`), the connection is pinned
/// to the address checked (no second resolution to rebind), no redirect is followed, the answer
/// is read to `maximumAnswerBytes`, and `lastError` holds a status and aasad's own short reason,
/// never bytes of the answer.
public final class VerificationChecker: Sendable {
    public struct Configuration: Sendable {
        /// The port fetched (`api.verify-port`): 80, the port a name's plain HTTP is on, unless a
        /// port mapping or a test puts the plain listener elsewhere.
        public var port: Int = 80
        /// Longest connect and whole check: an answer is 43 bytes; a server slower than this is
        /// not one that serves this deployment well.
        public var timeoutMilliseconds = 5_000
        /// Whether loopback and private addresses are fetched (`api.verify-private-addresses`).
        /// Off by default: a name pointed at 127.0.0.1 or at a private address reaches this
        /// deployment (or another machine of its network) from here, but never from a public
        /// CA, so its check would pass and its order fail (Let's Encrypt counts failed
        /// validations per name and account). On for a private CA or split-horizon DNS, where
        /// the CA reaches those addresses too, and in tests (`*.localhost`).
        public var allowsPrivateAddresses = false
        public init(port: Int = 80, allowsPrivateAddresses: Bool = false) {
            self.port = port
            self.allowsPrivateAddresses = allowsPrivateAddresses
        }
    }

    /// First pause after a failed check; doubled per attempt up to `longestBackoff`.
    public static let firstBackoff: Double = 30
    /// Longest pause between checks of one name: an hour, so a name fixed later is seen the
    /// same hour, and a name that never resolves costs 24 requests a day.
    public static let longestBackoff: Double = 3600
    /// Jitter on each pause, as a fraction (±10 %): replicas and names added together spread out.
    static let jitter = 0.1
    /// Checks run at once: each holds a connection and a thread for up to the timeout.
    public static let maximumConcurrentChecks = 4
    /// Checks per pass: with `maximumConcurrentChecks` and the timeout, a pass lasts at most
    /// 4 × 5 s; further due names wait for the next pass (the oldest due first).
    public static let maximumChecksPerPass = 16
    /// Largest answer read: the answer is 43 bytes; anything longer is not it.
    public static let maximumAnswerBytes = 256
    /// How often records are read again from disk (another replica's writes and checks).
    static let refreshInterval: Double = 5
    /// Pause between passes while nothing wakes the checker.
    static let passInterval: Double = 1

    let store: VerificationStore
    let configuration: Configuration
    let logger: Logger
    let onVerified: @Sendable (String) -> Void
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// The lock that makes this the one checker of the config volume.
    let lease: CheckerLease
    /// Turns of the checker's loop, whether or not it held the lease (the tests wait on it).
    let passes = Atomic<Int>(0)

    /// Whether this checker holds the volume's lease now (it checks; the others only read).
    public var holdsLease: Bool { lease.held }

    public init(
        store: VerificationStore, configuration: Configuration, logger: Logger, onVerified: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.onVerified = onVerified
        lease = CheckerLease(path: store.directory + "/" + CheckerLease.fileName)
    }

    /// The URL fetched for `name` and `token`.
    public static func url(name: String, token: String, port: Int) -> String {
        "http://\(name)\(port == 80 ? "" : ":\(port)")/.well-known/aasad-verify/\(token)"
    }

    public func start() {
        let thread = Thread { [self] in
            var lastRefresh = Date().timeIntervalSince1970
            while !stopped.load(ordering: .acquiring) {
                let now = Date().timeIntervalSince1970
                if now - lastRefresh >= Self.refreshInterval {
                    store.refresh()
                    lastRefresh = now
                }
                if lease.take(logger: logger) { pass(now: now) }
                passes.add(1, ordering: .releasing)
                _ = wake.wait(timeout: .now() + Self.passInterval)
            }
            lease.release()
            done.signal()
        }
        thread.name = "aasad-verify"
        started.store(true, ordering: .releasing)
        thread.start()
    }

    /// Asks for a pass now (a PUT made a name due).
    public func poke() { wake.signal() }

    public func stop() {
        guard started.load(ordering: .acquiring), !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        done.wait()
    }

    /// Checks the due names, at most `maximumChecksPerPass`, `maximumConcurrentChecks` at once.
    func pass(now: Double) {
        let batch = store.due(now: now, limit: Self.maximumChecksPerPass)
        guard !batch.isEmpty else { return }
        var start = 0
        while start < batch.count, !stopped.load(ordering: .acquiring) {
            let part = Array(batch[start..<min(batch.count, start + Self.maximumConcurrentChecks)])
            DispatchQueue.concurrentPerform(iterations: part.count) { i in checkAndRecord(part[i]) }
            start += part.count
        }
    }

    /// One check of `record`, and its outcome written (unless the record went or changed token
    /// meanwhile: the site was deleted or put again). The record is read from disk before and
    /// after: another replica sharing the directory may have verified the name, and a failure
    /// here must not undo that.
    func checkAndRecord(_ record: VerificationRecord) {
        guard let before = store.reread(record.name), before.token == record.token, !before.verified else { return }
        let outcome = check(record)
        guard var current = store.reread(record.name), current.token == record.token, !current.verified else { return }
        current = Self.recorded(outcome, in: current, now: Date().timeIntervalSince1970)
        do {
            try store.write(current)
        } catch {
            logger.error("cannot write a verification record", metadata: ["host": "\(record.name)", "error": "\(error)"])
            return
        }
        if case .verified = outcome {
            logger.notice("name verified: automatic certificates may be ordered for it", metadata: ["host": "\(record.name)"])
            onVerified(record.name)
        }
    }

    /// `record` after a check with `outcome` at `now`: verified; failed, with one more attempt
    /// and the back-off; or not attempted, due again soon with its attempts unchanged.
    static func recorded(_ outcome: Outcome, in record: VerificationRecord, now: Double) -> VerificationRecord {
        var current = record
        current.lastCheck = now
        switch outcome {
        case .verified:
            current.attempts = min(current.attempts + 1, 1_000_000)
            current.verified = true
            current.lastError = nil
        case .failed(let reason):
            current.attempts = min(current.attempts + 1, 1_000_000)
            current.lastError = reason
            current.nextCheck = now + Self.backoff(attempts: current.attempts)
        case .notAttempted(let reason):
            // Not this name's failure: other names' lookups hold every slot (a zone whose DNS
            // never answers). Counted as an attempt, it would back this name off for up to an
            // hour because of another tenant's names; it is tried again soon instead.
            current.lastError = reason
            current.nextCheck = now + Self.notAttemptedRetry
        }
        return current
    }

    /// Pause after the `attempts`-th failed check: 30 s doubling, at most an hour, ±10 %.
    static func backoff(attempts: Int) -> Double {
        let exponent = min(max(attempts - 1, 0), 20)
        let base = min(firstBackoff * Double(1 << exponent), longestBackoff)
        return base * Double.random(in: (1 - jitter)...(1 + jitter))
    }

    struct Failure: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    enum Outcome: Equatable {
        case verified
        case failed(String)
        /// Not checked: the lookup slots were all taken by other names' lookups.
        case notAttempted(String)
    }

    /// Seconds until a check that could not be made (`Outcome.notAttempted`) is tried again:
    /// long enough for left-behind lookups to end, short beside the back-off.
    static let notAttemptedRetry: Double = 10

    /// What `resolve` answers when `maximumPendingLookups` lookups are still running.
    static let resolverBusy = Failure("the resolver is busy with earlier lookups")

    /// Random hex digits a wildcard's child label keeps at least: 64 bits, so nobody can have
    /// pointed the child at this server in advance without a wildcard of their own. A wildcard
    /// whose parent is too long to leave room for them cannot be checked (a wildcard of a
    /// 238-byte parent or longer).
    static let minimumRandomHexDigits = 16

    /// The name fetched for a record: the record's own, or for a wildcard `*.a.example` a fresh
    /// random child `aasad-<hex>.a.example` each time. A wildcard site is served for any child
    /// only when the wildcard's DNS leads here, which one answered child nobody could have set up
    /// in advance proves; a fixed child could be pointed here alone. The label is cut to keep the
    /// name within `HostName.maximumLength`.
    static func fetchedName(_ name: String) -> String? {
        guard name.hasPrefix("*.") else { return name }
        let suffix = name.dropFirst(2)
        var random = [UInt8](repeating: 0, count: 8)
        precondition(RAND_bytes(&random, Int32(random.count)) == 1, "no randomness for a wildcard's check")
        let label = "aasad-" + random.map { String(format: "%02x", $0) }.joined()
        let room = HostName.maximumLength - 1 - suffix.utf8.count
        // The label is cut from its front, so the random digits at its end are kept.
        guard room >= minimumRandomHexDigits else { return nil }
        return String(label.suffix(room)) + "." + suffix
    }

    /// Fetches the name's URL at an address checked here, and compares the answer.
    func check(_ record: VerificationRecord) -> Outcome {
        guard let name = Self.fetchedName(record.name) else {
            return .failed("the wildcard's parent name leaves no room for a child label of 64 random bits")
        }
        let addresses: [String]
        switch Self.resolve(name, timeoutMilliseconds: configuration.timeoutMilliseconds) {
        case .failure(let failure) where failure == Self.resolverBusy: return .notAttempted(failure.reason)
        case .failure(let failure): return .failed(failure.reason)
        case .success(let found): addresses = found
        }
        for address in addresses {
            if let reason = Self.refusal(of: address, allowsPrivate: configuration.allowsPrivateAddresses) {
                return .failed("refused address: \(reason)")
            }
        }
        guard let address = addresses.first else { return .failed("the name does not resolve") }
        let port = configuration.port
        var options = OutboundClient.Configuration()
        options.connectTimeoutMilliseconds = configuration.timeoutMilliseconds
        options.totalTimeoutMilliseconds = configuration.timeoutMilliseconds
        options.maximumBodyBytes = Self.maximumAnswerBytes
        options.userAgent = "aasad-verify"
        options.isCancelled = { [self] in stopped.load(ordering: .relaxed) }
        var request = OutboundRequest(.get, url: Self.url(name: name, token: record.token, port: port))
        let literal = address.contains(":") ? "[\(address)]" : address
        request.connectTo = ["\(name):\(port):\(literal):\(port)"]
        request.pinsPlainHTTP = true
        let response: OutboundResponse
        do {
            response = try OutboundClient(configuration: options).perform(request)
        } catch {
            return .failed(Self.reason(error.kind))
        }
        guard response.status == 200 else { return .failed("status \(response.status)") }
        let expected = store.expectedAnswer(name: record.name, token: record.token)
        guard VerificationStore.constantTimeEqual(response.body, expected) else {
            return .failed("status 200, but not this deployment's answer for the name")
        }
        return .verified
    }

    /// aasad's own words for a failure, never the library's text (which may quote the answer).
    static func reason(_ kind: OutboundError.Kind) -> String {
        switch kind {
        case .dns: "the name does not resolve"
        case .connect: "no connection"
        case .timeout: "no answer within the timeout"
        case .tooLarge: "the answer is too large"
        case .http: "the answer is not HTTP"
        case .request, .tls, .certificate: "the request failed"
        }
    }

    /// Lookups still running whose check gave up waiting (a DNS server that never answers holds
    /// getaddrinfo for the resolver's own timeouts, resolv.conf(5): 5 s per try and server, up
    /// to 30 s and more): twice the checks at once, so a pass after a stuck one still resolves;
    /// beyond it a check fails at once instead of adding a thread.
    public static let maximumPendingLookups = 2 * maximumConcurrentChecks
    /// The process's lookups left running (one count for every checker: they share the resolver).
    static let pendingLookups = LookupSlots()

    /// Lookups running, counted against `maximumPendingLookups`.
    final class LookupSlots: Sendable {
        let running = Atomic<Int>(0)
    }

    /// The name's addresses, waiting at most `timeoutMilliseconds` for `lookup` (getaddrinfo
    /// has no timeout of its own): it runs on a thread of its own, which the check leaves behind
    /// when the time is up (it ends when the resolver gives up), at most `maximumPendingLookups`
    /// of them; so a check, a pass and `stop()` end within their bounds whatever DNS does.
    static func resolve(
        _ name: String, timeoutMilliseconds: Int, slots: LookupSlots = pendingLookups,
        lookup: @escaping @Sendable (String) -> Result<[String], Failure> = lookUp
    ) -> Result<[String], Failure> {
        if name == "localhost" || name.hasSuffix(".localhost") { return .success(["127.0.0.1"]) }
        guard slots.running.add(1, ordering: .acquiringAndReleasing).newValue <= maximumPendingLookups else {
            slots.running.subtract(1, ordering: .acquiringAndReleasing)
            return .failure(resolverBusy)
        }
        let found = LookupResult()
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result = lookup(name)
            found.value.withLock { $0 = result }
            slots.running.subtract(1, ordering: .acquiringAndReleasing)
            finished.signal()
        }
        thread.name = "aasad-verify-dns"
        thread.start()
        guard finished.wait(timeout: .now() + .milliseconds(max(0, timeoutMilliseconds))) == .success else {
            return .failure(Failure("the name's lookup took longer than the timeout"))
        }
        return found.value.withLock { $0 } ?? .failure(Failure("the name does not resolve"))
    }

    /// Where a lookup's thread leaves its result for the check that waits.
    private final class LookupResult: Sendable {
        let value = Mutex<Result<[String], Failure>?>(nil)
    }

    /// The name's addresses as text, through getaddrinfo (the resolver the process has:
    /// /etc/hosts and DNS). `localhost` and names under it are loopback (RFC 6761 §6.3), as
    /// libcurl resolves them: `resolve` answers those itself.
    static func lookUp(_ name: String) -> Result<[String], Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return .failure(Failure("the name does not resolve")) }
        defer { freeaddrinfo(first) }
        var out: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let e = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let addr = e.pointee.ai_addr,
                getnameinfo(addr, e.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0
            {
                let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !out.contains(address) { out.append(address) }
            }
            entry = e.pointee.ai_next
        }
        return out.isEmpty ? .failure(Failure("the name does not resolve")) : .success(out)
    }

    /// Why the checker does not connect to `address`, or nil. Always refused: unspecified,
    /// link-local (169.254.0.0/16, fe80::/10: cloud metadata services live there), multicast,
    /// broadcast, the IPv6 metadata addresses (AWS fd00:ec2::254), and IPv4-mapped forms of
    /// these. Refused unless `allowsPrivate` (`Configuration.allowsPrivateAddresses`): loopback
    /// (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10)
    /// and site-local (fec0::/10) addresses, which a public CA cannot reach.
    public static func refusal(of address: String, allowsPrivate: Bool = false) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            let a = [UInt8](withUnsafeBytes(of: v4.s_addr) { Array($0) })
            return refusal(ipv4: a, allowsPrivate: allowsPrivate)
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return "not an address" }
        let b = [UInt8](withUnsafeBytes(of: v6) { Array($0) })
        if b.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff {
            return refusal(ipv4: Array(b[12..<16]), allowsPrivate: allowsPrivate)
        }
        if b[0] == 0xfe && (b[1] & 0xc0) == 0x80 { return "link-local" }
        if b[0] == 0xff { return "multicast" }
        // fd00:ec2::254, the EC2 instance metadata service over IPv6.
        let metadata: [UInt8] = [0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54]
        if b == metadata { return "cloud metadata" }
        if !allowsPrivate {
            if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return "loopback" }
            if (b[0] & 0xfe) == 0xfc { return "private" }
            if b[0] == 0xfe && (b[1] & 0xc0) == 0xc0 { return "site-local" }
        }
        return nil
    }

    static func refusal(ipv4 a: [UInt8], allowsPrivate: Bool) -> String? {
        if a[0] == 0 { return "unspecified" }
        if a[0] == 169 && a[1] == 254 { return "link-local" }
        if a[0] >= 224 { return a == [255, 255, 255, 255] ? "broadcast" : "multicast or reserved" }
        // 100.100.100.200: Alibaba Cloud's metadata service, outside link-local.
        if a == [100, 100, 100, 200] { return "cloud metadata" }
        if !allowsPrivate {
            if a[0] == 127 { return "loopback" }
            if a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168) { return "private" }
            if a[0] == 100 && (a[1] & 0xc0) == 64 { return "shared (100.64.0.0/10)" }
        }
        return nil
    }
}
