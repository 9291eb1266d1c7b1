import CAASAOpenSSL
import Synchronization
import Testing

@testable import TLS

@Suite("TLS server: SNI, the context cache, connections that outlive evictions")
struct TLSServerTests {
    /// One certificate per name, and the sources the resolver hands out.
    final class Names: Sendable {
        let sources: [String: TLSServer.CertificateSource]
        init(_ names: [String]) throws {
            var sources: [String: TLSServer.CertificateSource] = [:]
            for name in names { sources[name] = try TestCertificate.make([name]).source(name) }
            self.sources = sources
        }
        subscript(_ name: String) -> TLSServer.CertificateSource { sources[name]! }
    }

    @Test("connections keep the contexts they started on and that SNI chose while the cache evicts them (regression: use after free)")
    func contextsOutliveEviction() throws {
        let names = try Names(["first.test", "second.test", "a.test", "b.test", "c.test", "d.test"])
        let tls = try TLSServer(defaultCertificate: names["first.test"], contextCacheCapacity: 2) { names.sources[$0] }
        weak var firstDefault: TLSContext?
        // Accepted on the first default; their handshakes have not started.
        let noSNI = try SocketPairTLS(tls, serverName: nil)
        let unknown = try SocketPairTLS(tls, serverName: "nowhere.test")
        let named = try SocketPairTLS(tls, serverName: "c.test")
        do {
            let context = tls.defaultContext
            firstDefault = context
        }
        // A new default, then handshakes for more names than the cache holds: the first default
        // and every site context but the last ones are evicted.
        try tls.replaceDefault(names["second.test"])
        for name in ["a.test", "b.test", "c.test", "d.test", "a.test"] {
            let connection = try SocketPairTLS(tls, serverName: name)
            #expect(connection.handshake())
            #expect(connection.presentedCommonName == name)
            #expect(connection.server.certificateIdentity == name)
        }
        #expect(firstDefault != nil, "the context of open connections was freed when the cache evicted it")
        // Connections that started on the evicted default finish their handshakes on it.
        #expect(noSNI.handshake())
        #expect(noSNI.presentedCommonName == "first.test" && noSNI.server.certificateIdentity == "first.test")
        #expect(unknown.handshake())
        #expect(unknown.presentedCommonName == "first.test" && unknown.server.certificateIdentity == "first.test")
        #expect(named.handshake())
        #expect(named.presentedCommonName == "c.test" && named.server.certificateIdentity == "c.test")
    }

    @Test("a context chosen by SNI stays alive for its connection after the cache drops it")
    func chosenContextOutlivesEviction() throws {
        let names = try Names(["default.test", "a.test", "b.test", "c.test"])
        let tls = try TLSServer(defaultCertificate: names["default.test"], contextCacheCapacity: 2) { names.sources[$0] }
        let kept = try SocketPairTLS(tls, serverName: "a.test")
        #expect(kept.handshake())
        weak let chosen: TLSContext? = kept.server.chosenContext
        for name in ["b.test", "c.test", "b.test", "c.test"] {
            #expect(try SocketPairTLS(tls, serverName: name).handshake())
        }
        #expect(chosen != nil, "the context a connection presented was freed under it")
        #expect(kept.server.certificateIdentity == "a.test")
    }
}

extension TLSServerTests {
    @Test("the server's cache keeps the names in use and drops the one fetched least recently")
    func cacheIsLeastRecentlyUsed() throws {
        let names = try Names(["default.test", "a.test", "b.test", "c.test"])
        let tls = try TLSServer(defaultCertificate: names["default.test"], contextCacheCapacity: 3) { names.sources[$0] }
        for name in ["a.test", "b.test", "a.test", "c.test"] {
            #expect(try SocketPairTLS(tls, serverName: name).handshake())
        }
        #expect(tls.cachedIdentities == ["c.test", "a.test", "default.test"])
    }
}

extension TLSServerTests {
    /// A server_name extension body (RFC 6066 §3) with one host_name entry.
    static func serverNameExtension(_ name: [UInt8], type: UInt8 = 0) -> [UInt8] {
        let entry = [type, UInt8(name.count >> 8), UInt8(name.count & 0xFF)] + name
        return [UInt8(entry.count >> 8), UInt8(entry.count & 0xFF)] + entry
    }

    @Test("the SNI name is read from the raw ClientHello extension, lower case")
    func serverNameParsed() {
        let bytes = Self.serverNameExtension(Array("WWW.Example.TEST".utf8))
        #expect(bytes.withUnsafeBufferPointer(TLSServer.serverName(inExtension:)) == "www.example.test")
    }

    @Test(
        "a malformed server_name extension gives no name, at every truncation and with each bad field",
        arguments: [
            serverNameExtension([]),  // empty name
            serverNameExtension(Array("a\u{0}b".utf8)),  // NUL inside
            serverNameExtension(Array("x.test".utf8), type: 1),  // not host_name
            serverNameExtension([UInt8](repeating: 97, count: TLSServer.maximumServerNameLength + 1)),
            [0, 9, 0, 0, 3, 97, 98, 99],  // list length larger than the extension
        ])
    func malformedServerName(_ bytes: [UInt8]) {
        #expect(bytes.withUnsafeBufferPointer(TLSServer.serverName(inExtension:)) == nil)
    }

    @Test("every truncation of a valid extension gives no name, never a crash; 255 bytes is the longest accepted")
    func truncations() {
        let longest = [UInt8](repeating: 97, count: TLSServer.maximumServerNameLength)
        let bytes = Self.serverNameExtension(longest)
        #expect(bytes.withUnsafeBufferPointer(TLSServer.serverName(inExtension:)) == String(decoding: longest, as: UTF8.self))
        for end in 0..<bytes.count {
            #expect(Array(bytes[0..<end]).withUnsafeBufferPointer(TLSServer.serverName(inExtension:)) == nil)
        }
    }

    @Test("a session resumes under the certificate it was issued with, never under another (in-process, TLS 1.3)")
    func sessionBoundToCertificate() throws {
        let names = try Names(["default.test", "a.test", "b.test"])
        let tls = try TLSServer(defaultCertificate: names["default.test"]) { names.sources[$0] }
        let first = try SocketPairTLS(tls, serverName: "a.test")
        #expect(first.handshake())
        let session = try #require(first.sessionAfterTicket())
        defer { SSL_SESSION_free(session) }
        let same = try SocketPairTLS(tls, serverName: "a.test", session: session)
        #expect(same.handshake() && same.server.resumed)
        let other = try SocketPairTLS(tls, serverName: "b.test", session: session)
        #expect(other.handshake() && !other.server.resumed && other.presentedCommonName == "b.test")
        let none = try SocketPairTLS(tls, serverName: nil, session: session)
        #expect(none.handshake() && !none.server.resumed)
    }
}

extension TLSServerTests {
    @Test("after a HelloRetryRequest (a second ClientHello) the SNI name's certificate is presented")
    func helloRetryRequest() throws {
        let names = try Names(["default.test", "a.test"])
        let tls = try TLSServer(defaultCertificate: names["default.test"]) { names.sources[$0] }
        let connection = try SocketPairTLS(tls, serverName: "a.test", groups: "P-521:X25519")
        #expect(connection.handshake())
        #expect(connection.presentedCommonName == "a.test" && connection.server.certificateIdentity == "a.test")
        let unknown = try SocketPairTLS(tls, serverName: "nowhere.test", groups: "P-521:X25519")
        #expect(unknown.handshake())
        #expect(unknown.presentedCommonName == "default.test" && unknown.server.certificateIdentity == "default.test")
    }
}

extension TLSServerTests {
    @Test("a pair whose context fails is not parsed again for every handshake naming it; the bound is kept")
    func failedPairsRemembered() throws {
        let names = try Names(["default.test", "a.test"])
        let tls = try TLSServer(defaultCertificate: names["default.test"]) { names.sources[$0] }
        func broken(_ identity: String) -> TLSServer.CertificateSource {
            TLSServer.CertificateSource(identity: identity, chainPEM: Array("not PEM".utf8), keyPEM: [], label: identity)
        }
        /// `a.test`'s good bytes under `identity`: made only if the failure was forgotten.
        func loads(_ identity: String) -> Bool {
            var good = names["a.test"]
            good.identity = identity
            return (try? tls.context(for: good)) != nil
        }
        #expect(throws: TLSError.self) { try tls.context(for: broken("f0")) }
        #expect(!loads("f0"), "the failed pair was parsed again")
        // Up to the bound, every failure is remembered; one more forgets the least recent.
        for i in 1..<TLSServer.maximumRememberedFailures { _ = try? tls.context(for: broken("f\(i)")) }
        #expect(tls.failedIdentities.count == TLSServer.maximumRememberedFailures)
        #expect(!loads("f1"), "a failure within the bound was forgotten")
        _ = try? tls.context(for: broken("f\(TLSServer.maximumRememberedFailures)"))
        #expect(tls.failedIdentities.count == TLSServer.maximumRememberedFailures)
        #expect(loads("f0"), "the least recent failure was kept past the bound")
        #expect(!loads("f2"))
    }
}

extension TLSServerTests {
    /// A clock tests move by hand.
    final class ManualClock: Sendable {
        private let current = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { current.withLock { $0 } }
        func advance(seconds: Int) { current.withLock { $0 += .seconds(seconds) } }
    }

    @Test("a failure not about the pair's bytes (no context could be made) is never remembered: the next handshake tries again")
    func transientFailureNotRemembered() throws {
        let names = try Names(["default.test", "a.test"])
        let failNext = Mutex(true)
        let tls = try TLSServer(
            defaultCertificate: names["default.test"], now: { ContinuousClock.now },
            makeContext: { source, version in
                if failNext.withLock({ $0 }) { return .failure(TLSError("cannot create a TLS context: out of memory", transient: true)) }
                return TLSServer.loadContext(source, version)
            }
        ) { names.sources[$0] }
        #expect(throws: TLSError.self) { try tls.context(for: names["a.test"]) }
        #expect(tls.failedIdentities.isEmpty)
        failNext.withLock { $0 = false }
        #expect((try? tls.context(for: names["a.test"])) != nil, "the pair stayed refused after a transient failure")
    }

    @Test("a remembered failure is trusted for failureRetrySeconds, and the pair is parsed again after")
    func failureRetried() throws {
        let names = try Names(["default.test", "a.test"])
        let clock = ManualClock()
        let broken = Mutex(true)
        let tls = try TLSServer(
            defaultCertificate: names["default.test"], now: { clock.now },
            makeContext: { source, version in
                if source.identity != "default.test" && broken.withLock({ $0 }) {
                    return .failure(TLSError("the certificate cannot be used"))
                }
                return TLSServer.loadContext(source, version)
            }
        ) { names.sources[$0] }
        #expect(throws: TLSError.self) { try tls.context(for: names["a.test"]) }
        #expect(tls.failedIdentities == ["a.test"])
        // The same bytes would load now; the remembered verdict holds until it is older than the bound.
        broken.withLock { $0 = false }
        clock.advance(seconds: TLSServer.failureRetrySeconds)
        #expect(throws: TLSError.self, "a failure was retried within failureRetrySeconds") { try tls.context(for: names["a.test"]) }
        clock.advance(seconds: 1)
        #expect((try? tls.context(for: names["a.test"])) != nil, "a failure older than failureRetrySeconds was still trusted")
    }
}
