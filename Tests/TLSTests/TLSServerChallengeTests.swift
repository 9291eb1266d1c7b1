import CAASAOpenSSL
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import TLS

/// TLS-ALPN-01 (RFC 8737) in the ClientHello callback: real handshakes on socketpairs.
@Suite("TLS server: acme-tls/1 challenges")
struct TLSServerChallengeTests {
    /// Challenge certificates by name, changeable while the server runs, and how often the server
    /// asked.
    final class Challenges: Sendable {
        private let sources = Mutex<[String: TLSServer.CertificateSource]>([:])
        private let asked = Atomic(0)
        func add(_ name: String, _ certificate: TestCertificate) {
            sources.withLock { $0[name] = certificate.source("challenge:\(name)") }
        }
        func resolve(_ name: String) -> TLSServer.CertificateSource? {
            asked.add(1, ordering: .relaxed)
            return sources.withLock { $0[name] }
        }
        var askedCount: Int { asked.load(ordering: .relaxed) }
    }

    static let acme = [TLSServer.acmeTLSProtocol]
    /// OpenSSL's reason for a received alert: 1000 + the alert's number (RFC 8446 §6).
    static func alertReason(_ alert: Int32) -> Int32 { 1000 + alert }

    static func server(
        _ sites: TLSServerTests.Names, challenges: Challenges?, contextCacheCapacity: Int = TLSServer.maximumCachedContexts
    ) throws -> TLSServer {
        var resolver: TLSServer.ChallengeResolver?
        if let challenges { resolver = { name in challenges.resolve(name) } }
        return try TLSServer(
            defaultCertificate: sites["default.test"], contextCacheCapacity: contextCacheCapacity, challengeResolver: resolver
        ) { sites.sources[$0] }
    }

    // MARK: - Refusals first

    @Test("acme-tls/1 without SNI is refused with no_application_protocol, the resolver never asked")
    func noServerName() throws {
        let sites = try TLSServerTests.Names(["default.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let connection = try SocketPairTLS(try Self.server(sites, challenges: challenges), serverName: nil, alpn: Self.acme)
        #expect(!connection.handshake())
        #expect(connection.serverFailure == .acmeChallengeUnavailable)
        #expect(connection.clientFailureReason == Self.alertReason(120))
        #expect(challenges.askedCount == 0)
    }

    @Test(
        "acme-tls/1 for a name without a pending challenge never gets a normal certificate: no_application_protocol",
        arguments: ["default.test", "a.test", "nowhere.test"])
    func noChallengeForName(_ name: String) throws {
        let sites = try TLSServerTests.Names(["default.test", "a.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let connection = try SocketPairTLS(try Self.server(sites, challenges: challenges), serverName: name, alpn: Self.acme)
        #expect(!connection.handshake())
        #expect(connection.serverFailure == .acmeChallengeUnavailable)
        #expect(connection.clientFailureReason == Self.alertReason(120))
        #expect(connection.presentedCommonName == nil, "a certificate was presented")
    }

    @Test("without a challenge resolver every acme-tls/1 ClientHello is refused")
    func noResolver() throws {
        let sites = try TLSServerTests.Names(["default.test", "a.test"])
        let connection = try SocketPairTLS(try Self.server(sites, challenges: nil), serverName: "a.test", alpn: Self.acme)
        #expect(!connection.handshake())
        #expect(connection.clientFailureReason == Self.alertReason(120))
    }

    @Test("a challenge certificate for other names than exactly the SNI name is refused with internal_error (RFC 8737 §3)")
    func challengeCertificateForOtherNames() throws {
        let sites = try TLSServerTests.Names(["default.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test", extraNames: ["d.test"]))
        challenges.add("e.test", try .challenge("other.test"))
        challenges.add("f.test", TestCertificate(chainPEM: Array("garbage".utf8), keyPEM: []))
        let tls = try Self.server(sites, challenges: challenges)
        for name in ["c.test", "e.test", "f.test"] {
            let connection = try SocketPairTLS(tls, serverName: name, alpn: Self.acme)
            #expect(!connection.handshake(), "\(name)")
            #expect(connection.clientFailureReason == Self.alertReason(80), "\(name)")
        }
    }

    /// ALPN extension bodies whose lengths lie, or that break RFC 7301 §3.1 otherwise.
    static let malformedALPN: [[UInt8]] = [
        [],  // no list length
        [0],  // half a list length
        [0, 0],  // empty list (at least one name is required)
        [0, 12, 10] + Array("acme-tls/1".utf8),  // list length past the end
        [0, 10, 10] + Array("acme-tls/1".utf8),  // list length short of the end
        [0, 11, 12] + Array("acme-tls/1".utf8),  // name length past the list
        [0, 12, 10] + Array("acme-tls/1".utf8) + [0],  // an empty name after it
        [0, 1, 0],  // an empty name alone
        [0xFF, 0xFF, 10] + Array("acme-tls/1".utf8),  // list length 65535
    ]

    @Test("the ALPN parser finds acme-tls/1 alone, among others, and refuses every malformed body and truncation")
    func alpnParser() {
        func offer(_ bytes: [UInt8]) -> TLSServer.ALPNOffer { bytes.withUnsafeBufferPointer(TLSServer.alpnOffer(inExtension:)) }
        #expect(offer(HandBuiltClientHello.alpnBody(["acme-tls/1"])) == .acmeTLSOnly)
        #expect(offer(HandBuiltClientHello.alpnBody(["acme-tls/1", "acme-tls/1"])) == .acmeTLSOnly)
        #expect(offer(HandBuiltClientHello.alpnBody(["h2", "acme-tls/1"])) == .other)
        #expect(offer(HandBuiltClientHello.alpnBody(["acme-tls/1", "http/1.1"])) == .other)
        #expect(offer(HandBuiltClientHello.alpnBody(["acme-tls/2"])) == .other)
        #expect(offer(HandBuiltClientHello.alpnBody(["acme-tls/1x"])) == .other)
        #expect(offer(HandBuiltClientHello.alpnBody(["h2"])) == .other)
        for bytes in Self.malformedALPN { #expect(offer(bytes) == .malformed, "\(bytes)") }
        let valid = HandBuiltClientHello.alpnBody(["h2", "acme-tls/1"])
        for end in 0..<valid.count { #expect(offer(Array(valid[..<end])) == .malformed, "truncated at \(end)") }
        let longest = HandBuiltClientHello.alpnBody([String(repeating: "x", count: 255)])
        #expect(offer(longest) == .other)
    }

    @Test(
        "a hand-built ClientHello with a malformed ALPN extension gets decode_error, for a challenge name and any other",
        arguments: malformedALPN)
    func malformedALPNRefused(_ body: [UInt8]) throws {
        let sites = try TLSServerTests.Names(["default.test", "a.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let tls = try Self.server(sites, challenges: challenges)
        for name in ["c.test", "a.test"] {
            let raw = try RawClient(tls)
            let (progress, reply) = raw.exchange(HandBuiltClientHello.record(serverName: name, alpnBody: body))
            guard case .failed = progress else {
                Issue.record("the handshake went on: \(progress)")
                continue
            }
            #expect(HandBuiltClientHello.fatalAlert(in: reply) == 50, "decode_error, \(name)")
        }
        #expect(challenges.askedCount == 0)
    }

    // MARK: - Answering

    @Test("acme-tls/1 with SNI gets the challenge certificate and ALPN acme-tls/1; the connection knows it is a challenge")
    func answersChallenge() throws {
        let sites = try TLSServerTests.Names(["default.test", "c.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let tls = try Self.server(sites, challenges: challenges)
        let connection = try SocketPairTLS(tls, serverName: "c.test", alpn: Self.acme)
        #expect(connection.handshake())
        #expect(connection.clientALPN == "acme-tls/1")
        #expect(connection.server.isACMEChallenge)
        #expect(connection.server.certificateIdentity == "challenge:c.test")
        #expect(connection.presentedCommonName == "c.test")
        // The challenge context is cached apart: the site contexts never saw it.
        #expect(tls.cachedChallengeIdentities == ["challenge:c.test"])
        #expect(!tls.cachedIdentities.contains("challenge:c.test"))
    }

    @Test("after a HelloRetryRequest the challenge certificate is still presented with acme-tls/1")
    func challengeAfterHelloRetry() throws {
        let sites = try TLSServerTests.Names(["default.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let connection = try SocketPairTLS(
            try Self.server(sites, challenges: challenges), serverName: "c.test", groups: "P-521:X25519", alpn: Self.acme)
        #expect(connection.handshake())
        #expect(connection.clientALPN == "acme-tls/1" && connection.server.isACMEChallenge)
    }

    @Test(
        "a client offering acme-tls/1 among other protocols is a normal client: the site's certificate, never acme-tls/1",
        arguments: [["h2", "acme-tls/1"], ["acme-tls/1", "http/1.1"], ["acme-tls/1", "h2", "http/1.1"]])
    func mixedOfferIsNormal(_ alpn: [String]) throws {
        let sites = try TLSServerTests.Names(["default.test", "c.test"])
        let challenges = Challenges()
        challenges.add("c.test", try .challenge("c.test"))
        let connection = try SocketPairTLS(try Self.server(sites, challenges: challenges), serverName: "c.test", alpn: alpn)
        #expect(connection.handshake())
        #expect(connection.clientALPN == (alpn.contains("h2") ? "h2" : "http/1.1"))
        #expect(!connection.server.isACMEChallenge)
        #expect(connection.server.certificateIdentity == "c.test")
        #expect(challenges.askedCount == 0)
    }

    @Test("normal clients are unaffected: h2, http/1.1 and no ALPN get the site's certificate by SNI")
    func normalClients() throws {
        let sites = try TLSServerTests.Names(["default.test", "a.test"])
        let tls = try Self.server(sites, challenges: Challenges())
        for (alpn, selected) in [(["h2", "http/1.1"], "h2"), (["http/1.1"], "http/1.1")] as [([String], String)] {
            let connection = try SocketPairTLS(tls, serverName: "a.test", alpn: alpn)
            #expect(connection.handshake() && connection.clientALPN == selected && connection.presentedCommonName == "a.test")
        }
        let plain = try SocketPairTLS(tls, serverName: "a.test")
        #expect(plain.handshake() && plain.clientALPN == nil && plain.presentedCommonName == "a.test")
    }

    @Test("hundreds of acme-tls/1 handshakes for distinct names never evict a site's context; the challenge cache stays bounded")
    func challengesDoNotEvictSites() throws {
        let sites = try TLSServerTests.Names(["default.test", "a.test", "b.test"])
        let challenges = Challenges()
        let count = 300
        for i in 0..<count { challenges.add("c\(i).test", try .challenge("c\(i).test")) }
        // Room for exactly the default and the two sites: one site context evicted would show.
        let tls = try Self.server(sites, challenges: challenges, contextCacheCapacity: 3)
        for name in ["a.test", "b.test"] { #expect(try SocketPairTLS(tls, serverName: name).handshake()) }
        let before = tls.cachedIdentities
        for i in 0..<count {
            let connection = try SocketPairTLS(tls, serverName: "c\(i).test", alpn: Self.acme)
            #expect(connection.handshake() && connection.presentedCommonName == "c\(i).test", "c\(i).test")
        }
        #expect(tls.cachedIdentities == before)
        #expect(Set(before) == ["default.test", "a.test", "b.test"])
        #expect(tls.cachedChallengeIdentities.count == TLSServer.maximumCachedChallengeContexts)
        #expect(tls.cachedChallengeIdentities.first == "challenge:c\(count - 1).test")
    }
}

/// A client that writes raw bytes to one end of a socketpair, the server's `TLSConnection` on
/// the other: for ClientHellos no TLS library would send.
final class RawClient {
    let server: TLSConnection
    private let fds: (Int32, Int32)

    init(_ tls: TLSServer) throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        fds = (pair[0], pair[1])
        for fd in pair { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        server = try #require(tls.makeConnection(fd: fds.0))
    }

    deinit {
        close(fds.0)
        close(fds.1)
    }

    /// Sends `bytes`, lets the server take one handshake step, and returns its progress and
    /// what it wrote back.
    func exchange(_ bytes: [UInt8]) -> (TLSConnection.Progress, [UInt8]) {
        _ = bytes.withUnsafeBytes { write(fds.1, $0.baseAddress, $0.count) }
        let progress = server.handshake()
        var reply = [UInt8](repeating: 0, count: 16 * 1024)
        let n = read(fds.1, &reply, reply.count)
        return (progress, n > 0 ? Array(reply[..<n]) : [])
    }
}
