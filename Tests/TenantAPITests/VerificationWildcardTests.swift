import Foundation
import Logging
import TestSupport
import Testing

@testable import Served
@testable import TenantAPI

/// A wildcard site's ownership check (docs/api.md, "Ownership check"): the record is the
/// wildcard's, the checker asks a fresh random child of it, the public path answers a child with
/// the wildcard's HMAC, and the gate holds the wildcard back until then.
@Suite(.serialized) struct VerificationWildcardTests {
    @Test func aChildIsAnsweredForItsWildcardOnlyWithTheWildcardsTokenAndNeverWithAnExactNamesAnswer() throws {
        let directory = try TemporaryDirectory(prefix: "verify-wild")
        let store = try VerificationStore(configDirectory: directory.path)
        try store.create("*.w.example", now: 0)
        try store.create("x.w.example", now: 0)
        let wild = try #require(store.record("*.w.example"))
        let exact = try #require(store.record("x.w.example"))
        let wildAnswer = store.expectedAnswer(name: "*.w.example", token: wild.token)
        #expect(store.answer(host: "x.w.example", token: wild.token) == wildAnswer)
        #expect(store.answer(host: "aasad-0123.w.example", token: wild.token) == wildAnswer)
        #expect(store.answer(host: "x.w.example", token: exact.token) == store.expectedAnswer(name: "x.w.example", token: exact.token))
        #expect(wildAnswer != store.expectedAnswer(name: "x.w.example", token: wild.token))
        // Not a child one label below: the suffix itself, a grandchild, another domain, the
        // wildcard as a host, a child with the exact name's token.
        #expect(store.answer(host: "w.example", token: wild.token) == nil)
        #expect(store.answer(host: "y.x.w.example", token: wild.token) == nil)
        #expect(store.answer(host: "x.v.example", token: wild.token) == nil)
        #expect(store.answer(host: "*.w.example", token: wild.token) == nil)
        #expect(store.answer(host: "z.w.example", token: exact.token) == nil)
        #expect(VerificationStore.wildcard(above: "example") == nil)
        #expect(VerificationStore.wildcard(above: "a.example") == nil)
        #expect(VerificationStore.wildcard(above: "a.b.example") == "*.b.example")
        // The record is kept on disk under the wildcard's own name and read back by a replica.
        let other = try VerificationStore(configDirectory: directory.path, creates: false)
        #expect(other.record("*.w.example")?.token == wild.token)
        #expect(other.blocks("*.w.example"))
    }

    @Test func theCheckerAsksAFreshRandomChildEachTimeAndVerifiesTheWildcard() throws {
        let directory = try TemporaryDirectory(prefix: "verify-wild")
        let store = try VerificationStore(configDirectory: directory.path)
        try store.create("*.w.localhost", now: 0)
        let record = try #require(store.record("*.w.localhost"))
        let answer = String(decoding: store.expectedAnswer(name: "*.w.localhost", token: record.token), as: UTF8.self)
        let log = directory.path + "/hosts.log"
        let server = try StandInServer(mode: "host", body: answer, log: log)
        var configuration = VerificationChecker.Configuration(port: server.port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        let checker = VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { _ in }
        #expect(store.blocks("*.w.localhost"))
        #expect(checker.check(record) == .verified)
        #expect(checker.check(record) == .verified)
        let hosts = fileLines(log, atLeast: 2)
        #expect(hosts.count == 2 && hosts[0] != hosts[1], "\(hosts)")
        for host in hosts {
            let name = String(host.split(separator: ":").first ?? "")
            #expect(name.hasPrefix("aasad-") && name.hasSuffix(".w.localhost") && name.utf8.count == 6 + 16 + 12, "\(host)")
        }
        // An answer for the exact child's name (a server that knows one child only) is not it.
        let fixed = try StandInServer(
            mode: "fixed", body: String(decoding: store.expectedAnswer(name: "x.w.localhost", token: record.token), as: UTF8.self))
        var other = configuration
        other.port = fixed.port
        let wrong = VerificationChecker(store: store, configuration: other, logger: Logger(label: "test")) { _ in }
        #expect(wrong.check(record) == .failed(VerificationCheckerTests.notTheAnswer))
        checker.checkAndRecord(record)
        #expect(!store.blocks("*.w.localhost"))
    }

    @Test func theRandomChildOfALongWildcardIsStillAHostName() throws {
        let label = String(repeating: "a", count: 63)
        let suffix = [label, label, label, String(repeating: "b", count: 59)].joined(separator: ".")
        #expect(suffix.utf8.count == 251)
        // 64 random bits at least: a parent leaving 16 characters for the label is checked, one
        // leaving 15 is not.
        let longest = String(suffix.dropFirst(251 - (HostName.maximumLength - 1 - VerificationChecker.minimumRandomHexDigits)))
        #expect(VerificationChecker.fetchedName("*." + longest) != nil)
        #expect(VerificationChecker.fetchedName("*.a" + longest) == nil)
        #expect(VerificationChecker.fetchedName("*." + suffix) == nil)
        for wildcard in ["*." + longest, "*." + String(suffix.dropFirst(20)), "*.w.example"] {
            let child = try #require(VerificationChecker.fetchedName(wildcard))
            let parsed = try HostName(parsing: child)
            #expect(parsed.name == child && !parsed.isWildcard && child.utf8.count <= HostName.maximumLength, "\(child)")
            #expect(child.hasSuffix(String(wildcard.dropFirst(1))))
        }
        #expect(VerificationChecker.fetchedName("a.example") == "a.example")
    }

    @Test func aWildcardSiteAddedOverTheAPIIsHeldBackUntilVerified() throws {
        let fixture = try APIFixture(verification: true)
        let store = try #require(fixture.verification)
        let status = fixture.put("*.a.example").status
        #expect(status == 201 || status == 202, "\(status)")
        let token = try #require(store.record("*.a.example")).token
        #expect(store.blocks("*.a.example"))
        let check = try #require(
            try JSONSerialization.jsonObject(with: Data(fixture.call("GET", "/v1/sites/*.a.example/verification").body)) as? [String: Any])
        #expect(check["state"] as? String == "unverified")
        #expect(check["url"] as? String == "http://*.a.example/.well-known/aasad-verify/\(token)")
        #expect(fixture.call("DELETE", "/v1/sites/*.a.example").status == 204)
        #expect(store.record("*.a.example") == nil)
    }
}
