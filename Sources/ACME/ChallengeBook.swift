import Reactor
import Synchronization
public import TLS

/// The challenge answers pending in storage, mirrored in memory: handshakes and requests on the
/// serving loops look answers up here and never touch the filesystem (a stalled shared volume
/// must not stall a loop, and a client must not be able to make the server read files).
///
/// Answers this process presents are put in at once; answers another replica presents are found
/// by a look at the storage's challenge folders every `pollMilliseconds` on the book's own
/// thread. The presenting replica waits `propagationMilliseconds` before asking the CA to
/// validate, so that every replica has the answer by then.
public final class ChallengeBook: Sendable {
    /// How often the storage's challenge folders are read (a directory listing each; a file read
    /// only for an answer not seen before).
    public static let pollMilliseconds: Int64 = 500
    /// What a presenting replica waits before the CA may come: two looks by every other replica.
    public static let propagationMilliseconds: Int64 = 2 * pollMilliseconds + 200
    /// Challenge files older than this are left over from a replica that stopped mid-order (an
    /// order's polling lasts at most 5 minutes): removed, so the folders stay small.
    public static let staleSeconds: Int64 = 3600
    /// Answers read per look at most: a folder flooded by a broken replica cannot make one look
    /// (or the book) grow without bound.
    public static let maximumAnswers = 1000

    struct Entries: Sendable {
        /// By the name's storage component (`StorageName`): what a file name gives back, even
        /// for a name too long to be read back from it.
        var tlsALPN: [String: (source: TLSServer.CertificateSource, version: ACMEStorage.FileVersion?)] = [:]
        var http01: [String: (answer: [UInt8], version: ACMEStorage.FileVersion?)] = [:]
        var stopped = false
        var thread: LoopThread?
    }

    let storage: ACMEStorage
    let entries = Mutex(Entries())
    let wakeup: Wakeup

    init(storage: ACMEStorage) throws(ACMEError) {
        self.storage = storage
        do {
            wakeup = try Wakeup()
        } catch {
            throw .storage("cannot make the challenge book's wake-up pipe: \(error.reason)")
        }
    }

    /// The TLS-ALPN-01 certificate pending for `name`.
    public func tlsALPN(for name: String) -> TLSServer.CertificateSource? {
        guard let component = try? StorageName.component(name) else { return nil }
        return entries.withLock { $0.tlsALPN[component]?.source }
    }

    /// The HTTP-01 key authorization pending for `token`.
    public func http01(token: String) -> [UInt8]? { entries.withLock { $0.http01[token]?.answer } }

    /// An answer this process just stored.
    func addTLSALPN(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        guard let component = try? StorageName.component(name) else { return }
        let source = Self.source(name: name, chainPEM: chainPEM, keyPEM: keyPEM)
        entries.withLock { $0.tlsALPN[component] = (source, nil) }
    }

    func addHTTP01(token: String, answer: [UInt8]) { entries.withLock { $0.http01[token] = (answer, nil) } }

    func removeTLSALPN(name: String) {
        guard let component = try? StorageName.component(name) else { return }
        entries.withLock { $0.tlsALPN[component] = nil }
    }

    func removeHTTP01(token: String) { entries.withLock { $0.http01[token] = nil } }

    /// A challenge certificate as the TLS layer takes it: a new identity for new bytes, so a
    /// context cached for an earlier challenge is never served for a later one.
    static func source(name: String, chainPEM: [UInt8], keyPEM: [UInt8]) -> TLSServer.CertificateSource {
        TLSServer.CertificateSource(
            identity: "acme-tls/1 " + ACMEStorage.identity(chainPEM: chainPEM, keyPEM: keyPEM), chainPEM: chainPEM, keyPEM: keyPEM,
            label: "tls-alpn-01 challenge for \(name)")
    }

    /// Brings the book in line with the storage folders: new or replaced files read, vanished
    /// ones dropped (answers this process added and has not yet seen on disk are kept).
    func poll(now: Int64 = WallClock.seconds()) {
        let root = storage.root + "/challenges"
        // Listed up to the bound, not whole and then cut: a folder of a million names costs its
        // first `maximumAnswers` every poll.
        let tokens = (try? Files.entries(of: root + "/http-01", limit: Self.maximumAnswers)) ?? []
        let names = (try? Files.entries(of: root + "/tls-alpn-01", limit: Self.maximumAnswers)) ?? []
        var seenTokens = Set<String>()
        for token in tokens where !token.hasPrefix(".") {
            guard let path = storage.http01Path(for: token), let status = try? Files.status(path), status.kind == .regular else { continue }
            if status.modified < now - Self.staleSeconds {
                try? Files.remove(path)
                continue
            }
            seenTokens.insert(token)
            let version = ACMEStorage.FileVersion(status)
            if entries.withLock({ $0.http01[token]?.version }) == version { continue }
            guard let answer = storage.http01Answer(token: token) else { continue }
            entries.withLock { $0.http01[token] = (answer, version) }
        }
        var seenNames = Set<String>()
        for file in names where file.hasSuffix(".pem") && !file.hasPrefix(".") {
            let component = String(file.dropLast(4))
            guard StorageName.isDigested(component) || StorageName.name(ofReadable: component) != nil else { continue }
            let path = storage.tlsALPNChallengePath(component: component)
            guard let status = try? Files.status(path), status.kind == .regular else { continue }
            if status.modified < now - Self.staleSeconds {
                try? Files.remove(path)
                continue
            }
            seenNames.insert(component)
            let version = ACMEStorage.FileVersion(status)
            if entries.withLock({ $0.tlsALPN[component]?.version }) == version { continue }
            guard let pair = storage.tlsALPNChallenge(path: path) else { continue }
            let name = StorageName.name(ofReadable: component) ?? component
            let source = Self.source(name: name, chainPEM: pair.chainPEM, keyPEM: pair.keyPEM)
            entries.withLock { $0.tlsALPN[component] = (source, version) }
        }
        entries.withLock { entries in
            for (token, entry) in entries.http01 where entry.version != nil && !seenTokens.contains(token) { entries.http01[token] = nil }
            for (component, entry) in entries.tlsALPN where entry.version != nil && !seenNames.contains(component) {
                entries.tlsALPN[component] = nil
            }
        }
    }

    func start() {
        poll()
        let thread = LoopThread.spawn { [self] in
            while !entries.withLock({ $0.stopped }) {
                wakeup.wait(milliseconds: Self.pollMilliseconds)
                poll()
            }
        }
        entries.withLock { $0.thread = thread }
    }

    func stop() {
        let thread = entries.withLock { entries -> LoopThread? in
            entries.stopped = true
            return entries.thread
        }
        wakeup.wake()
        thread?.join()
    }
}
