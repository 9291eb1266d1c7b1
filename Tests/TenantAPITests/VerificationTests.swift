import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import TenantAPI

@Suite struct VerificationAnswerTests {
    func store() throws -> (TemporaryDirectory, VerificationStore) {
        let directory = try TemporaryDirectory(prefix: "verify")
        return (directory, try VerificationStore(configDirectory: directory.path))
    }

    @Test func theAnswerIsGivenOnlyForThatNameAndItsCurrentToken() throws {
        let (directory, store) = try store()
        defer { withExtendedLifetime(directory) {} }
        try store.create("a.localhost", now: 0)
        try store.create("b.localhost", now: 0)
        let a = try #require(store.record("a.localhost"))
        let b = try #require(store.record("b.localhost"))
        // Hostile first: another name's token, the token under another name, a token with a
        // byte more or less, an overlong token, no record.
        #expect(store.answer(host: "a.localhost", token: b.token) == nil)
        #expect(store.answer(host: "b.localhost", token: a.token) == nil)
        #expect(store.answer(host: "a.localhost", token: a.token + "A") == nil)
        #expect(store.answer(host: "a.localhost", token: String(a.token.dropLast())) == nil)
        #expect(store.answer(host: "a.localhost", token: String(repeating: "A", count: VerificationStore.maximumTokenLength + 1)) == nil)
        #expect(store.answer(host: "c.localhost", token: a.token) == nil)
        let answer = try #require(store.answer(host: "a.localhost", token: a.token))
        #expect(answer.count == 43)
        // The answer is bound to the name and the token: neither the path nor another name's answer.
        #expect(answer != Array(a.token.utf8))
        #expect(answer != store.expectedAnswer(name: "b.localhost", token: a.token))
        #expect(answer != store.expectedAnswer(name: "a.localhost", token: b.token))
        #expect(a.token.utf8.count == 43 && b.token != a.token)
    }

    @Test func theKeyIsCreatedOnceOwnerOnlyAndSharedByASecondStore() throws {
        let (directory, first) = try store()
        try first.create("a.localhost", now: 0)
        let token = try #require(first.record("a.localhost")).token
        var info = stat()
        #expect(stat(directory.path(".aasad-verify/key"), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(info.st_size == off_t(VerificationStore.keyBytes))
        let second = try VerificationStore(configDirectory: directory.path)
        #expect(second.answer(host: "a.localhost", token: token) == first.answer(host: "a.localhost", token: token))
    }

    @Test func aKeyFileOfAnotherLengthIsRefusedNotReplaced() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        try FileManager.default.createDirectory(atPath: directory.path(".aasad-verify"), withIntermediateDirectories: true)
        try directory.write(".aasad-verify/key", Array(repeating: 7, count: VerificationStore.keyBytes - 1))
        #expect(throws: VerificationError.self) { try VerificationStore(configDirectory: directory.path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path(".aasad-verify/key"))).count == VerificationStore.keyBytes - 1)
    }

    /// A record file that is no record of its name gates the name (the API made a file there);
    /// none verifies it, and `aasad sites`' read sees the same states as the server.
    @Test func recordsThatAreNotWhatTheirFileNameSaysVerifyNothingAndKeepTheGate() throws {
        let (directory, store) = try store()
        try store.create("a.localhost", now: 0)
        var forged = try #require(store.record("a.localhost"))
        forged.verified = true
        let bytes = try JSONEncoder().encode(forged)
        // A record copied under another name, a name that is no host, an oversized record.
        try directory.write(".aasad-verify/names/b.localhost.json", Array(bytes))
        try directory.write(".aasad-verify/names/..json", Array(bytes))
        try directory.write(".aasad-verify/names/A.localhost.json", Array(bytes))
        try directory.write(
            ".aasad-verify/names/c.localhost.json", Array(repeating: 32, count: VerificationStore.maximumRecordBytes + 1))
        store.refresh()
        #expect(store.all().map(\.name).sorted() == ["a.localhost", "b.localhost", "c.localhost"])
        #expect(store.all().allSatisfy { !$0.verified })
        #expect(store.blocks("a.localhost") && store.blocks("b.localhost") && store.blocks("c.localhost"))
        #expect(store.answer(host: "b.localhost", token: forged.token) == nil)
        #expect(
            VerificationStore.readStates(configDirectory: directory.path).byName == [
                "a.localhost": false, "b.localhost": false, "c.localhost": false,
            ])
    }

    /// A refresh reads only the record files that changed since it last read them (by `lstat`),
    /// and a record this process wrote is never lost to it.
    @Test func aRefreshReadsOnlyTheRecordsThatChanged() throws {
        let (directory, store) = try store()
        for name in ["a.localhost", "b.localhost", "c.localhost"] { try store.create(name, now: 0) }
        store.refresh()
        let first = store.fileReads.load(ordering: .relaxed)
        store.refresh()
        #expect(store.fileReads.load(ordering: .relaxed) == first)
        // Another replica verifies b: read again, and only b.
        let other = try VerificationStore(configDirectory: directory.path)
        var b = try #require(other.record("b.localhost"))
        b.verified = true
        try other.write(b)
        store.refresh()
        #expect(store.fileReads.load(ordering: .relaxed) == first + 1)
        #expect(store.record("b.localhost")?.verified == true)
        #expect(store.blocks("a.localhost") && store.blocks("c.localhost"))
        // Removed by the other replica: gone here too.
        other.remove("c.localhost")
        store.refresh()
        #expect(store.record("c.localhost") == nil)
        #expect(store.record("a.localhost") != nil)
    }

    /// A record that cannot be read for a while (here a directory where its file was) keeps what
    /// memory holds: a failed read never lifts the gate.
    @Test func aRecordThatCannotBeReadKeepsItsGate() throws {
        let (directory, store) = try store()
        try store.create("a.localhost", now: 0)
        let token = try #require(store.record("a.localhost")).token
        try FileManager.default.removeItem(atPath: directory.path(".aasad-verify/names/a.localhost.json"))
        try FileManager.default.createDirectory(
            atPath: directory.path(".aasad-verify/names/a.localhost.json"), withIntermediateDirectories: false)
        store.refresh()
        #expect(store.blocks("a.localhost"))
        #expect(store.reread("a.localhost")?.token == token)
        #expect(store.blocks("a.localhost"))
    }

    @Test func addressesTheCheckerRefuses() {
        for address in [
            "169.254.169.254", "169.254.0.1", "fe80::1", "febf::1", "::ffff:169.254.169.254", "0.0.0.0", "::", "224.0.0.1",
            "255.255.255.255", "ff02::1", "fd00:ec2::254", "100.100.100.200", "not-an-address",
        ] {
            #expect(VerificationChecker.refusal(of: address) != nil, "\(address)")
            #expect(VerificationChecker.refusal(of: address, allowsPrivate: true) != nil, "\(address)")
        }
        // Reachable from here but not from a public CA: refused unless private addresses are allowed.
        for address in [
            "127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
            "100.64.0.1", "100.127.255.255", "fc00::1", "fd12::1", "fec0::1",
        ] {
            #expect(VerificationChecker.refusal(of: address) != nil, "\(address)")
            #expect(VerificationChecker.refusal(of: address, allowsPrivate: true) == nil, "\(address)")
        }
        for address in [
            "203.0.113.9", "2001:db8::1", "169.253.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "8.8.8.8",
        ] {
            #expect(VerificationChecker.refusal(of: address) == nil, "\(address)")
        }
    }

    @Test func backOffDoublesFromThirtySecondsToAnHourWithJitter() {
        for _ in 0..<50 {
            let first = VerificationChecker.backoff(attempts: 1)
            #expect(first >= 27 && first <= 33)
            let second = VerificationChecker.backoff(attempts: 2)
            #expect(second >= 54 && second <= 66)
            // 30 × 2^7 = 3840 is past the hour: capped.
            #expect(VerificationChecker.backoff(attempts: 8) <= 3600 * 1.1)
            #expect(VerificationChecker.backoff(attempts: 7) >= 1920 * 0.9)
            #expect(VerificationChecker.backoff(attempts: Int.max) <= 3600 * 1.1)
        }
    }
}

/// The checker against servers a tenant controls: only this deployment's answer for that name and
/// token verifies it.
@Suite(.serialized) struct VerificationCheckerTests {
    static let notTheAnswer = "status 200, but not this deployment's answer for the name"

    /// This deployment's answer for the record's name and token.
    static func right(_ store: VerificationStore, _ record: VerificationRecord) -> String {
        String(decoding: store.expectedAnswer(name: record.name, token: record.token), as: UTF8.self)
    }

    func checker(_ store: VerificationStore, port: Int) -> VerificationChecker {
        var configuration = VerificationChecker.Configuration(port: port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        return VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { _ in }
    }

    func fixture(_ name: String = "a.localhost") throws -> (TemporaryDirectory, VerificationStore, VerificationRecord) {
        let directory = try TemporaryDirectory(prefix: "verify")
        let store = try VerificationStore(configDirectory: directory.path)
        try store.create(name, now: 0)
        return (directory, store, try #require(store.record(name)))
    }

    @Test func aNameThatDoesNotResolveStaysUnverified() throws {
        let (directory, store, record) = try fixture("no-such-name.invalid")
        defer { withExtendedLifetime(directory) {} }
        let outcome = checker(store, port: 80).check(record)
        #expect(outcome == .failed("the name does not resolve"))
    }

    @Test func anEchoServerStaysUnverified() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let server = try StandInServer(mode: "echo")
        #expect(checker(store, port: server.port).check(record) == .failed(Self.notTheAnswer))
    }

    @Test func anotherNamesAnswerStaysUnverified() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        try store.create("b.localhost", now: 0)
        let other = try #require(store.record("b.localhost"))
        // What this deployment answers for b, replayed by a's server; and a's answer for b's token.
        for body in [
            store.expectedAnswer(name: "b.localhost", token: other.token), store.expectedAnswer(name: "b.localhost", token: record.token),
            store.expectedAnswer(name: "a.localhost", token: other.token),
        ] {
            let server = try StandInServer(mode: "fixed", body: String(decoding: body, as: UTF8.self))
            #expect(checker(store, port: server.port).check(record) == .failed(Self.notTheAnswer))
        }
    }

    @Test func aRedirectToTheRightAnswerIsNotFollowed() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let right = try StandInServer(mode: "fixed", body: Self.right(store, record))
        let target = "http://a.localhost:\(right.port)/.well-known/aasad-verify/\(record.token)"
        let redirect = try StandInServer(mode: "redirect", body: target)
        #expect(checker(store, port: redirect.port).check(record) == .failed("status 301"))
        #expect(checker(store, port: right.port).check(record) == .verified)
    }

    @Test func aHugeAnswerIsCutAndStaysUnverified() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        // The right answer repeated: its first 43 bytes are right, the answer is not.
        let server = try StandInServer(mode: "huge", body: Self.right(store, record))
        #expect(checker(store, port: server.port).check(record) == .failed("the answer is too large"))
    }

    @Test func aSlowAnswerTimesOutAndStaysUnverified() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let server = try StandInServer(mode: "slow", body: Self.right(store, record))
        #expect(checker(store, port: server.port).check(record) == .failed("no answer within the timeout"))
    }

    @Test func nothingListeningStaysUnverified() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        #expect(checker(store, port: nobody.port).check(record) == .failed("no connection"))
    }

    @Test func theRightAnswerVerifiesAndAFailureBacksOff() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let bad = try StandInServer(mode: "echo")
        let failing = checker(store, port: bad.port)
        let before = Date().timeIntervalSince1970
        failing.checkAndRecord(record)
        let failed = try #require(store.record(record.name))
        #expect(!failed.verified && failed.attempts == 1 && failed.lastError?.hasPrefix("status 200") == true)
        #expect(failed.nextCheck >= before + 27 && failed.nextCheck <= Date().timeIntervalSince1970 + 33)
        #expect(store.blocks(record.name))
        let good = try StandInServer(mode: "fixed", body: Self.right(store, record))
        let verified = Mutex<[String]>([])
        var configuration = VerificationChecker.Configuration(port: good.port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        let passing = VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { name in
            verified.withLock { $0.append(name) }
        }
        passing.checkAndRecord(record)
        #expect(store.record(record.name)?.verified == true)
        #expect(store.record(record.name)?.attempts == 2)
        #expect(!store.blocks(record.name))
        #expect(verified.withLock { $0 } == [record.name])
    }

    @Test func aRecordRemovedDuringTheCheckIsNotWrittenBack() throws {
        let (directory, store, record) = try fixture()
        defer { withExtendedLifetime(directory) {} }
        let good = try StandInServer(mode: "fixed", body: Self.right(store, record))
        store.remove(record.name)
        checker(store, port: good.port).checkAndRecord(record)
        #expect(store.record(record.name) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.directory + "/names/a.localhost.json"))
    }
}

/// The API's side: which writes make records, who can read them.
@Suite struct VerificationEndpointTests {
    func json(_ response: APIResponse) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func anotherTenantCannotReadTheCheckAndAnUnknownSiteIs404() throws {
        let fixture = try APIFixture(verification: true)
        #expect(fixture.put("a.example").status == 201 || fixture.put("a.example").status == 200)
        #expect(fixture.call("GET", "/v1/sites/a.example/verification", token: APIFixture.customerA).status == 403)
        #expect(fixture.call("GET", "/v1/sites/a.example/verification", token: nil).status == 401)
        #expect(fixture.call("GET", "/v1/sites/b.example/verification").status == 404)
        #expect(fixture.call("PUT", "/v1/sites/a.example/verification", body: "{}").status == 405)
        #expect(fixture.call("GET", "/v1/sites/a.example/verification/x").status == 404)
        #expect(fixture.call("GET", "/v1/sites/a.example/verificatio").status == 404)
    }

    @Test func aSiteAddedOverTheAPIIsUnverifiedAndDeleteRemovesTheRecord() throws {
        let fixture = try APIFixture(verification: true)
        let store = try #require(fixture.verification)
        _ = fixture.put("a.example")
        let state = try json(fixture.call("GET", "/v1/sites/a.example"))
        #expect(state["verification"] as? String == "unverified")
        let check = try json(fixture.call("GET", "/v1/sites/a.example/verification"))
        let token = try #require(store.record("a.example")).token
        #expect(check["state"] as? String == "unverified")
        #expect(check["url"] as? String == "http://a.example/.well-known/aasad-verify/\(token)")
        #expect(check["attempts"] as? Int == 0)
        #expect(check["lastError"] is NSNull)
        #expect(check["nextCheck"] is String)
        #expect(store.blocks("a.example"))
        // A replace keeps the record (and its token).
        _ = fixture.put("a.example", extra: #","page":"<p>hi</p>""#)
        #expect(store.record("a.example")?.token == token)
        #expect(fixture.call("DELETE", "/v1/sites/a.example").status == 204)
        #expect(store.record("a.example") == nil)
        #expect(!FileManager.default.fileExists(atPath: store.directory + "/names/a.example.json"))
    }

    @Test func aReplacedVerifiedSiteStaysVerifiedAndANewAliasNeedsItsOwnCheck() throws {
        let fixture = try APIFixture(verification: true)
        let store = try #require(fixture.verification)
        _ = fixture.put("a.example")
        var record = try #require(store.record("a.example"))
        record.verified = true
        try store.write(record)
        _ = fixture.put("a.example", extra: #","settings":{"aliases":["www.a.example"]}"#)
        #expect(store.record("a.example")?.verified == true)
        #expect(store.blocks("www.a.example"))
        let check = try json(fixture.call("GET", "/v1/sites/a.example/verification"))
        #expect(check["state"] as? String == "verified")
        #expect(check["nextCheck"] is NSNull)
        let aliases = try #require(check["aliases"] as? [[String: Any]])
        #expect(aliases.map { $0["host"] as? String } == ["www.a.example"])
        #expect(aliases.first?["state"] as? String == "unverified")
        // The alias dropped: its record goes.
        _ = fixture.put("a.example")
        #expect(store.record("www.a.example") == nil)
    }

    @Test func aSiteWrittenByHandNeedsNoCheck() throws {
        let fixture = try APIFixture(verification: true) { directory in
            try directory.write("sites/hand.example/apple-app-site-association", Array(APIFixture.aasa.utf8))
        }
        let check = try json(fixture.call("GET", "/v1/sites/hand.example/verification"))
        #expect(check["state"] as? String == "not-required")
        #expect(check["url"] is NSNull)
        // A PUT replacing it: the operator vouched for the name; it stays not required.
        #expect(fixture.put("hand.example").status != 422)
        #expect(fixture.verification?.record("hand.example") == nil)
        let list = try json(fixture.call("GET", "/v1/sites"))
        let entries = try #require(list["sites"] as? [[String: Any]])
        #expect(entries.first?["verification"] as? String == "not-required")
    }

    @Test func aTenantWritingIntoItsSiteDirectoryCannotMarkAnyNameVerified() throws {
        let fixture = try APIFixture(verification: true)
        let store = try #require(fixture.verification)
        _ = fixture.put("a.example")
        var forged = try #require(store.record("a.example"))
        forged.verified = true
        // Where a tenant's files go: its own site directory. The loader and the store never read a
        // record there.
        try fixture.directory.write("sites/a.example/.aasad-verify/names/a.example.json", Array(try JSONEncoder().encode(forged)))
        store.refresh()
        #expect(store.blocks("a.example"))
    }

    /// A record that cannot be written (here a directory planted where it goes) fails the PUT with
    /// nothing on disk: a site served without its record would be `not-required`, and its name
    /// ordered a certificate for, unchecked.
    @Test func aPUTWhoseRecordCannotBeWrittenWritesNothing() throws {
        let fixture = try APIFixture(verification: true)
        let store = try #require(fixture.verification)
        try FileManager.default.createDirectory(atPath: store.directory + "/names/a.example.json", withIntermediateDirectories: false)
        #expect(fixture.put("a.example").status == 500)
        #expect(fixture.entries().isEmpty)
        // No record was made; the file there keeps the name waiting (`aRecordThatCannotBeReadKeepsItsGate`).
        #expect(store.record("a.example").map(\.token.isEmpty) ?? true)
        // The same for an alias a replace adds: the site stays as it was.
        _ = fixture.put("b.example")
        try FileManager.default.createDirectory(atPath: store.directory + "/names/www.b.example.json", withIntermediateDirectories: false)
        #expect(fixture.put("b.example", extra: #","settings":{"aliases":["www.b.example"]}"#).status == 500)
        #expect(fixture.file("b.example", "site.yaml") == nil)
        #expect(store.blocks("b.example"))
    }
}
