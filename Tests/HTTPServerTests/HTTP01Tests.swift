import HTTPCore
import Synchronization
import Testing

@testable import HTTPServer

/// ACME's HTTP-01 path through the one request path, without sockets.
@Suite("HTTP-01: the token, the listener, the answer")
struct HTTP01Tests {
    static let token = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
    static let keyAuthorization = Array("\(token).9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI".utf8)
    static let prefix = "/.well-known/acme-challenge/"
    static let plainPeer = Peer(fd: -1, client: "-", isAdmin: false, counted: .http)

    /// Key authorizations by host and token, and every lookup the exchange made.
    final class Answers: Sendable {
        let answers: [String: [UInt8]]
        private let lookups = Mutex<[String]>([])
        init(_ answers: [String: [UInt8]]) { self.answers = answers }
        func resolve(_ host: String, _ token: String) -> [UInt8]? {
            lookups.withLock { $0.append("\(host) \(token)") }
            return answers["\(host) \(token)"]
        }
        var asked: [String] { lookups.withLock { $0 } }
    }

    static func exchange(_ answers: Answers) throws -> Exchange {
        try ExchangeTests.exchange(http01: { answers.resolve($0, $1) })
    }

    static func answer(
        _ exchange: inout Exchange, _ path: String, _ method: Method = .get, host: String? = "a.test", peer: Peer = plainPeer
    )
        -> Response
    {
        ExchangeTests.answer(&exchange, method, path, host: host, version: .http1, peer: peer)
    }

    /// Paths under the prefix whose token must never reach the resolver.
    static let hostilePaths = [
        prefix,  // empty token
        prefix + "..%2f..%2fetc%2fpasswd", prefix + "..", prefix + ".", prefix + "a/b", prefix + "\(token)/",
        prefix + "%41", prefix + "tok=", prefix + "tok.en", prefix + "tok en", prefix + "tok+en", prefix + "tok~",
        prefix + String(repeating: "A", count: HTTP01.maximumTokenLength + 1),
        prefix + "\u{e9}t\u{e9}",  // UTF-8 bytes above 0x7F
    ]

    @Test("hostile tokens are 404 and never reach the resolver", arguments: hostilePaths)
    func hostileTokens(_ path: String) throws {
        let answers = Answers(["a.test \(Self.token)": Self.keyAuthorization])
        var exchange = try Self.exchange(answers)
        #expect(Self.answer(&exchange, path).status == .notFound)
        #expect(Self.answer(&exchange, path, .head).status == .notFound)
        #expect(answers.asked.isEmpty, "the resolver was asked for \(answers.asked)")
    }

    @Test("a token of exactly the longest length is looked up; one byte more is not")
    func tokenLengthBound() throws {
        let longest = String(repeating: "A", count: HTTP01.maximumTokenLength)
        let answers = Answers([:])
        var exchange = try Self.exchange(answers)
        _ = Self.answer(&exchange, Self.prefix + longest)
        _ = Self.answer(&exchange, Self.prefix + longest + "A")
        #expect(answers.asked == ["a.test \(longest)"])
    }

    @Test("GET on the plain listener gets the key authorization as application/octet-stream; HEAD the same head without it")
    func answers() throws {
        let answers = Answers(["a.test \(Self.token)": Self.keyAuthorization])
        var exchange = try Self.exchange(answers)
        let get = Self.answer(&exchange, Self.prefix + Self.token)
        #expect(get.status == .ok && get.sendsBody && get.body == Self.keyAuthorization)
        #expect(get.headers.value(of: "content-type") == "application/octet-stream")
        #expect(get.headers.value(of: "content-length") == "\(Self.keyAuthorization.count)")
        #expect(get.headers.value(of: "cache-control") == "no-store")
        let head = Self.answer(&exchange, Self.prefix + Self.token, .head)
        #expect(head.status == .ok && !head.sendsBody && head.headers == get.headers)
        // Upper-case Host and a port: normalised before the lookup.
        #expect(Self.answer(&exchange, Self.prefix + Self.token, host: "A.Test:80").status == .ok)
        #expect(Self.answer(&exchange, Self.prefix + Self.token, .other).status == .methodNotAllowed)
    }

    @Test("an unknown token, another host, no host or a hostile host is 404; a hostile host never reaches the resolver")
    func unknown() throws {
        let answers = Answers(["a.test \(Self.token)": Self.keyAuthorization])
        var exchange = try Self.exchange(answers)
        #expect(Self.answer(&exchange, Self.prefix + "unknownToken").status == .notFound)
        #expect(Self.answer(&exchange, Self.prefix + Self.token, host: "b.test").status == .notFound)
        #expect(Self.answer(&exchange, Self.prefix + Self.token, host: nil).status == .notFound)
        for host in ["", "*.a.test", "../a.test", "a..test", "a.test/x", "[::1]"] {
            #expect(Self.answer(&exchange, Self.prefix + Self.token, host: host).status == .notFound, "\(host)")
        }
        #expect(answers.asked == ["a.test unknownToken", "b.test \(Self.token)"])
    }

    @Test("an answer that is not a key authorization for the token is never served")
    func answerChecked() throws {
        let answers = Answers([
            "a.test aaaa": Array("bbbb.thumb".utf8),  // another token's
            "a.test cccc": Array("cccc.".utf8),  // no thumbprint
            "a.test dddd": Array("dddd.th<script>".utf8),  // not base64url
            "a.test eeee": Array("eeee.".utf8) + [UInt8](repeating: 65, count: HTTP01.maximumAnswerLength),  // too long
            "a.test ffff": Array("ffff".utf8),  // no dot
        ])
        var exchange = try Self.exchange(answers)
        for token in ["aaaa", "cccc", "dddd", "eeee", "ffff"] {
            #expect(Self.answer(&exchange, Self.prefix + token).status == .notFound, "\(token)")
        }
    }

    @Test("only the plain listener answers: HTTPS and admin peers get what any other path gets")
    func plainListenerOnly() throws {
        let answers = Answers(["a.test \(Self.token)": Self.keyAuthorization])
        var exchange = try Self.exchange(answers)
        let https = Peer(fd: -1, client: "-", isAdmin: false, counted: .https)
        #expect(Self.answer(&exchange, Self.prefix + Self.token, peer: https).status == .notFound)
        var noResolver = try ExchangeTests.exchange()
        #expect(Self.answer(&noResolver, Self.prefix + Self.token).status == .notFound)
        #expect(answers.asked.isEmpty)
    }

    @Test("challenge requests are counted under their own path class, by status")
    func counted() throws {
        let answers = Answers(["a.test \(Self.token)": Self.keyAuthorization])
        var exchange = try Self.exchange(answers)
        _ = Self.answer(&exchange, Self.prefix + Self.token)
        _ = Self.answer(&exchange, Self.prefix + "nothing")
        var total = ServerStatistics()
        exchange.counters.add(to: &total)
        let challenge = total.requests.filter { $0.key.path == .acmeChallenge && $0.value > 0 }
        #expect(challenge.count == 2)
        #expect(challenge.first { $0.key.status == .success }?.value == 1)
        #expect(challenge.first { $0.key.status == .clientError }?.value == 1)
        #expect(Traffic.PathClass.acmeChallenge.label == "/.well-known/acme-challenge/")
    }
}
