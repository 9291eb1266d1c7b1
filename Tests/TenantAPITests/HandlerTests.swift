import Foundation
import Glibc
import Logging
import Synchronization
import Testing

@testable import TenantAPI

@Suite struct HostAndAuthTests {
    static let badHosts: [String] = [
        "..", ".", "%2e%2e", "%2E%2E", "a%2fb", "a.example%00", "A.example", "a.Example", "a.example.", ".a.example",
        "a..example", "10.0.0.1", "127.1", "[::1]", "a:443", "ex\u{e4}mple.com", "a_b.example", "a.*.example", "*",
        "*.com", "-a.example", "a-.example", "a%20b", String(repeating: "a", count: 64) + ".example",
        (0..<64).map { _ in "abc" }.joined(separator: "."), "a\u{0}b.example", "a b.example", "",
    ]

    @Test(arguments: badHosts)
    func aHostNotInNormalFormIs400(_ host: String) throws {
        let fixture = try APIFixture()
        for method in ["GET", "PUT", "DELETE"] {
            let answer = fixture.call(method, "/v1/sites/\(host)", body: method == "PUT" ? #"{"aasa":{}}"# : nil)
            #expect(answer.status == 400, "\(method) \(host)")
            #expect(answer.errorCode == "bad-request")
        }
        #expect(fixture.entries().isEmpty)
    }

    @Test func pathsWithSlashesOrDotSegmentsAfterTheHostAreRefused() throws {
        let fixture = try APIFixture()
        #expect(fixture.call("PUT", "/v1/sites/a.example/../../etc", body: "{}").status == 400)
        #expect(fixture.call("GET", "/v1/sites/a.example/%2e%2e").status == 400)
        #expect(fixture.call("GET", "/v1/sites/a.example/other").status == 404)
        #expect(fixture.call("GET", "/v1/other").status == 404)
        #expect(fixture.call("GET", "/elsewhere").status == 404)
    }

    @Test func withoutAValidTokenEveryRequestIs401() throws {
        let fixture = try APIFixture()
        for token: String? in [nil, "wrong", "", APIFixture.platform + "x", String(repeating: "x", count: 5000)] {
            let answer = fixture.call("GET", "/v1/sites/a.example", token: token)
            #expect(answer.status == 401)
            #expect(answer.header("www-authenticate") == "Bearer realm=\"aasad\"")
        }
        let basic = fixture.api.handle(
            APIRequest(method: "GET", target: "/v1/sites", headers: [("authorization", "Basic \(APIFixture.platform)")]))
        #expect(basic.status == 401)
        // Unauthenticated, a malformed host tells nothing either.
        #expect(fixture.call("GET", "/v1/sites/..", token: nil).status == 401)
        // The scheme's case does not matter (RFC 9110 §11.1).
        let lower = fixture.api.handle(
            APIRequest(method: "GET", target: "/v1/sites", headers: [("authorization", "bearer \(APIFixture.platform)")]))
        #expect(lower.status == 200)
    }

    @Test func aTenantTouchesOnlyItsOwnPatterns() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("other.example").status == 201)
        // Another tenant's site: not read, not replaced, not deleted.
        for method in ["GET", "PUT", "DELETE"] {
            let answer = fixture.call(
                method, "/v1/sites/other.example", token: APIFixture.customerA,
                body: method == "PUT" ? #"{"aasa":\#(APIFixture.aasa)}"# : nil)
            #expect(answer.status == 403, "\(method)")
        }
        #expect(fixture.file("other.example", "apple-app-site-association") != nil)
        // The suffix itself is not below it.
        #expect(fixture.put("customer-a.example", token: APIFixture.customerA).status == 403)
        #expect(fixture.put("x.customer-a.example", token: APIFixture.customerA).status == 201)
        #expect(fixture.put("links.customer-a.com", token: APIFixture.customerA).status == 201)
        // An alias outside the patterns is a name the tenant may not claim.
        let alias = fixture.put(
            "y.customer-a.example", extra: #","settings":{"aliases":["www.other.example"]}"#, token: APIFixture.customerA)
        #expect(alias.status == 403)
        #expect(!fixture.entries().contains("y.customer-a.example"))
        // In any form the loader reads: upper case, a trailing dot, a single-label name.
        for form in [#""WWW.Other.Example""#, #""www.other.example.""#, "1", #""other""#] {
            let other = fixture.put("y.customer-a.example", extra: #","settings":{"aliases":[\#(form)]}"#, token: APIFixture.customerA)
            #expect(other.status == 403 || other.status == 422, "\(form) \(other.status) \(other.text)")
        }
        let inside = fixture.put(
            "y.customer-a.example", extra: #","settings":{"aliases":["WWW.Y.Customer-A.Example."]}"#, token: APIFixture.customerA)
        #expect(inside.status == 201, "\(inside.text)")
        #expect(fixture.entries().filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test func aReadTokenCannotWrite() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("a.example").status == 201)
        #expect(fixture.put("b.example", token: APIFixture.reader).status == 403)
        #expect(fixture.call("DELETE", "/v1/sites/a.example", token: APIFixture.reader).status == 403)
        #expect(fixture.call("GET", "/v1/sites/a.example", token: APIFixture.reader).status == 200)
        #expect(fixture.entries() == ["a.example"])
    }

    @Test func readOnlyRefusesWritesWithTheReason() throws {
        let fixture = try APIFixture(readOnly: "git-sync owns the config directory")
        for method in ["PUT", "DELETE"] {
            let answer = fixture.call(method, "/v1/sites/a.example", body: method == "PUT" ? #"{"aasa":\#(APIFixture.aasa)}"# : nil)
            #expect(answer.status == 405)
            #expect(answer.errorCode == "read-only")
            #expect(answer.header("allow") == "GET, HEAD")
            #expect(answer.text.contains("git-sync"))
        }
        #expect(fixture.call("GET", "/v1/sites").status == 200)
    }

    @Test func otherMethodsAre405WithAllow() throws {
        let fixture = try APIFixture()
        let list = fixture.call("POST", "/v1/sites", body: "{}")
        #expect(list.status == 405)
        #expect(list.header("allow") == "GET, HEAD")
        let one = fixture.call("PATCH", "/v1/sites/a.example", body: "{}")
        #expect(one.status == 405)
        #expect(one.header("allow") == "GET, HEAD, PUT, DELETE")
    }

    @Test func requestsPerTokenAreLimited() throws {
        let fixture = try APIFixture(requestsPerMinute: 3)
        for _ in 0..<3 { #expect(fixture.call("GET", "/v1/sites").status == 200) }
        let limited = fixture.call("GET", "/v1/sites")
        #expect(limited.status == 429)
        #expect(limited.errorCode == "too-many-requests")
        #expect(Int(limited.header("retry-after") ?? "") == 20)
        // Another token has its own bucket.
        #expect(fixture.call("GET", "/v1/sites", token: APIFixture.reader).status == 200)
    }

    @Test func theBucketRefillsAtTheRate() {
        let limiter = APIRateLimiter(requestsPerMinute: 60)
        let start = ContinuousClock.now
        for _ in 0..<60 { #expect(limiter.take("t", now: start) == nil) }
        #expect(limiter.take("t", now: start) == 1)
        #expect(limiter.take("t", now: start + .seconds(1)) == nil)
        #expect(limiter.take("t", now: start + .seconds(1)) == 1)
    }
}

@Suite struct WriteTests {
    static let links =
        #"[{"relation":["delegate_permission/common.handle_all_urls"],"target":{"namespace":"android_app","package_name":"com.example","sha256_cert_fingerprints":["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
    @Test func putCreatesThenReplacesAndGetAgrees() throws {
        let fixture = try APIFixture()
        let created = fixture.put(
            "a.example", extra: #","assetlinks":\#(Self.links),"settings":{"cache-control":"max-age=60"},"page":"<p>hi</p>""#)
        #expect(created.status == 201, "\(created.text)")
        let etag = try #require(created.header("etag"))
        #expect(etag.utf8.count == 66)
        #expect(created.json["served"] as? Bool == true)
        #expect(fixture.file("a.example", "index.html") == "<p>hi</p>")
        #expect(fixture.file("a.example", "site.yaml")?.contains("page: index.html") == true)
        let got = fixture.call("GET", "/v1/sites/a.example")
        #expect(got.status == 200)
        #expect(got.header("etag") == etag)
        #expect(got.json["etag"] as? String == etag)
        let replaced = fixture.put("a.example")
        #expect(replaced.status == 200)
        #expect(replaced.header("etag") != etag)
        #expect(fixture.file("a.example", "index.html") == nil)
        #expect(fixture.entries() == ["a.example"])
        // Nothing left in sites/ but the site.
        #expect(!fixture.entries().contains { $0.hasPrefix(".") })
    }

    @Test func theETagIsTheContractsDigest() {
        // name NUL length NUL bytes, "-" for absent files, in the order aasa, assetlinks, site.yaml, page.
        let input = "apple-app-site-association\u{0}2\u{0}{}assetlinks.json\u{0}-\u{0}site.yaml\u{0}-\u{0}index.html\u{0}-\u{0}"
        #expect(SiteDirectory.etag(["apple-app-site-association": Array("{}".utf8)]) == "\"\(APIFixture.sha(input))\"")
    }

    @Test func preconditionsGuardLostUpdates() throws {
        let fixture = try APIFixture()
        #expect(
            fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":\#(APIFixture.aasa)}"#, headers: [("if-match", "*")]).status == 412)
        let created = fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":\#(APIFixture.aasa)}"#, headers: [("if-none-match", "*")])
        #expect(created.status == 201)
        let etag = try #require(created.header("etag"))
        #expect(
            fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":\#(APIFixture.aasa)}"#, headers: [("if-none-match", "*")]).status
                == 412)
        let stale = "\"\(String(repeating: "0", count: 64))\""
        let lost = fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":{}}"#, headers: [("if-match", stale)])
        #expect(lost.status == 412)
        #expect(lost.errorCode == "precondition-failed")
        #expect(fixture.call("DELETE", "/v1/sites/a.example", headers: [("if-match", stale)]).status == 412)
        #expect(fixture.call("DELETE", "/v1/sites/a.example", headers: [("if-match", "W/\(etag)")]).status == 412)
        #expect(
            fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":\#(APIFixture.aasa)}"#, headers: [("if-match", etag)]).status == 200)
    }

    @Test func anInvalidSiteIs422WithWhereAndNothingChanges() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("a.example").status == 201)
        let before = fixture.file("a.example", "apple-app-site-association")
        let bad = fixture.put("a.example", aasa: #"{"applinks":{"details":[{"appIDs":["nope"],"components":[{"/":"/a/*"}]}]}}"#)
        #expect(bad.status == 422)
        let problems = try #require(bad.json["problems"] as? [[String: Any]])
        #expect(problems.contains { $0["path"] as? String == "apple-app-site-association" && $0["line"] is Int })
        #expect(fixture.file("a.example", "apple-app-site-association") == before)
        let settings = fixture.put("a.example", extra: #","settings":{"cache-controls":"x"}"#)
        #expect(settings.status == 422)
        #expect(settings.text.contains("site.yaml"))
        #expect(fixture.entries() == ["a.example"])
    }

    static let badBodies: [String] = [
        #"{"aasa":{},"extra":1}"#, #"{"aasa":[]}"#, #"{"assetlinks":[]}"#, #"[]"#, #"{"aasa":{}"#, #"{"aasa":{},"aasa":{}}"#,
        #"{"aasa":{},"settings":{"page":"x.html"}}"#, #"{"aasa":{},"page":1}"#, #"{"aasa":{},"assetlinks":{}}"#, "\u{FF}",
        String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000),
        #"{"aasa":"# + String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_001),
    ]

    @Test(arguments: badBodies)
    func aBadBodyIs422InBody(_ body: String) throws {
        let fixture = try APIFixture()
        let answer = fixture.call("PUT", "/v1/sites/a.example", body: body)
        #expect(answer.status == 422)
        let problems = try #require(answer.json["problems"] as? [[String: Any]])
        #expect(problems.first?["path"] as? String == "body")
        #expect(fixture.entries().isEmpty)
    }

    @Test func theBodyIsBoundedAndTyped() throws {
        let fixture = try APIFixture()
        let limit = TenantAPI.maximumBodyBytes
        let filler = { (n: Int) in #"{"aasa":{},"page":""# + String(repeating: "x", count: n - 21) + #""}"# }
        #expect(filler(limit).utf8.count == limit)
        #expect(fixture.call("PUT", "/v1/sites/a.example", body: filler(limit + 1)).status == 413)
        #expect(fixture.call("PUT", "/v1/sites/a.example", body: filler(limit)).status == 422)
        #expect(fixture.call("PUT", "/v1/sites/a.example", body: "{}", contentType: "text/plain").status == 415)
        #expect(
            fixture.call(
                "PUT", "/v1/sites/a.example", body: #"{"aasa":\#(APIFixture.aasa)}"#, contentType: "application/json; charset=utf-8"
            )
            .status == 201)
    }

    @Test func aSiteManagedByHandIsAConflict() throws {
        let fixture = try APIFixture(prepare: { dir in
            try dir.write("sites/keys.example/apple-app-site-association", Array(APIFixture.aasa.utf8))
            try dir.write("sites/keys.example/tls/cert.pem", Array("x".utf8))
            try dir.write("sites/real.example/apple-app-site-association", Array(APIFixture.aasa.utf8))
            try FileManager.default.createSymbolicLink(atPath: dir.path("sites/alias.example"), withDestinationPath: "real.example")
        })
        #expect(fixture.put("keys.example").status == 409)
        #expect(fixture.call("DELETE", "/v1/sites/keys.example").status == 409)
        #expect(FileManager.default.fileExists(atPath: fixture.sites + "/keys.example/tls/cert.pem"))
        // Read, it shows the API's files; the alias is no site directory.
        #expect(fixture.call("GET", "/v1/sites/keys.example").status == 200)
        #expect(fixture.call("GET", "/v1/sites/alias.example").status == 404)
        #expect(fixture.put("alias.example").status == 409)
        #expect(fixture.call("DELETE", "/v1/sites/alias.example").status == 409)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: fixture.sites + "/alias.example")) == "real.example")
    }

    /// A directory fuller than a site's listing takes is listed no further (ConfigLoader.swift):
    /// never the API's to write, read by its files' names.
    @Test func aCrowdedSiteDirectoryIsAConflictAndReadByName() throws {
        // The API's files written after the others: a listing that stopped at its bound would
        // not hold them.
        let fixture = try APIFixture(prepare: { dir in
            for index in 0..<2000 { try dir.write("sites/full.example/junk-\(index)", []) }
            try dir.write("sites/full.example/apple-app-site-association", Array(APIFixture.aasa.utf8))
            try dir.write("sites/full.example/site.yaml", Array("cache-control: max-age=60\n".utf8))
        })
        let put = fixture.put("full.example")
        #expect(put.status == 409)
        #expect(put.text.contains("holds more than 64 entries"), "\(put.text)")
        #expect(fixture.call("DELETE", "/v1/sites/full.example").status == 409)
        #expect(FileManager.default.fileExists(atPath: fixture.sites + "/full.example/junk-0"))
        let read = fixture.call("GET", "/v1/sites/full.example")
        #expect(read.status == 200)
        #expect(read.text.contains(#""aasa":{"sha256""#), "\(read.text)")
        #expect(read.text.contains(#""settings":{"sha256""#), "\(read.text)")
    }

    @Test func ownershipIsDecidedAsAReloadWouldDecideIt() throws {
        let fixture = try APIFixture(prepare: { dir in
            try dir.write("sites/a.example/apple-app-site-association", Array(APIFixture.aasa.utf8))
            try dir.write("sites/a.example/site.yaml", Array("aliases: [www.a.example, held.example]\n".utf8))
        })
        // An alias another site holds.
        let taken = fixture.put("b.example", extra: #","settings":{"aliases":["www.a.example"]}"#)
        #expect(taken.status == 422, "\(taken.text)")
        #expect(taken.text.contains("ownership"))
        #expect(!fixture.entries().contains("b.example"))
        // A directory for a name another site holds as an alias: that site would lose it.
        let steal = fixture.put("held.example")
        #expect(steal.status == 422, "\(steal.text)")
        #expect(steal.text.contains("would lose"))
        #expect(!fixture.entries().contains("held.example"))
        // A free alias is held, and shown.
        let free = fixture.put("c.example", extra: #","settings":{"aliases":["www.c.example"]}"#)
        #expect(free.status == 201, "\(free.text)")
        let state = fixture.call("GET", "/v1/sites/c.example").json
        #expect((state["aliases"] as? [String: Any])?["held"] as? [String] == ["www.c.example"])
    }

    @Test func deleteRemovesTheWholeSite() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("a.example").status == 201)
        let deleted = fixture.call("DELETE", "/v1/sites/a.example")
        #expect(deleted.status == 204)
        #expect(fixture.entries().isEmpty)
        #expect(fixture.call("DELETE", "/v1/sites/a.example").status == 404)
        #expect(fixture.call("GET", "/v1/sites/a.example").status == 404)
    }

    @Test func aWriteNotServedInTimeIs202() throws {
        let fixture = try APIFixture(state: { _ in NeverServed() }, servedTimeout: .milliseconds(50))
        let put = fixture.put("a.example")
        #expect(put.status == 202)
        #expect(put.json["served"] as? Bool == false)
        #expect(fixture.file("a.example", "apple-app-site-association") != nil)
    }

    @Test func everyWriteIsOneLogLine() throws {
        let fixture = try APIFixture()
        let etag = fixture.put("a.example").header("etag")
        _ = fixture.call("DELETE", "/v1/sites/a.example")
        let writes = fixture.logs.writes()
        #expect(writes.count == 2)
        #expect(writes.first?["token"] == "platform")
        #expect(writes.first?["action"] == "put")
        #expect(writes.first?["before"] == "null")
        #expect(writes.first.flatMap { $0["after"] }.map { "\($0)" } == etag)
        #expect(writes.last?["action"] == "delete")
        #expect(writes.last.flatMap { $0["before"] }.map { "\($0)" } == etag)
        #expect(writes.last?["after"] == "null")
    }

    @Test func aFullDiskLeavesNothingBehind() throws {
        let fixture = try APIFixture(failWrite: { name in name == "assetlinks.json" ? ENOSPC : nil })
        #expect(fixture.put("a.example").status == 201)
        let before = fixture.file("a.example", "apple-app-site-association")
        let full = fixture.put("a.example", extra: #","assetlinks":\#(Self.links)"#)
        #expect(full.status == 507)
        #expect(full.errorCode == "insufficient-storage")
        #expect(fixture.entries() == ["a.example"])
        #expect(fixture.file("a.example", "apple-app-site-association") == before)
        #expect(fixture.file("a.example", "assetlinks.json") == nil)
        let quota = try APIFixture(failWrite: { _ in EDQUOT })
        #expect(quota.put("b.example").status == 507)
        #expect(quota.entries().isEmpty)
    }

    @Test func leftoversOfAKilledWriterAreRemovedAtStart() throws {
        let fixture = try APIFixture(prepare: { dir in
            try dir.write("sites/.api-a.example-1234/apple-app-site-association", Array("{".utf8))
            try dir.write("sites/.other/keep", Array("x".utf8))
        })
        #expect(fixture.entries() == [".other"])
    }

    @Test func twoWritersRacingLeaveOneWholeSite() throws {
        let fixture = try APIFixture()
        #expect(fixture.put("race.example").status == 201)
        let mixes = Atomic<Int>(0)
        let reads = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        // A reader that opens the directory once and reads both files through it, as the loader
        // reads one site: the two files must come from one writer.
        let reader = Thread {
            while !stop.load(ordering: .relaxed) {
                let dir = open(fixture.sites + "/race.example", O_RDONLY | O_DIRECTORY)
                guard dir >= 0 else { continue }
                defer { close(dir) }
                func read(_ name: String) -> String? {
                    let fd = openat(dir, name, O_RDONLY)
                    guard fd >= 0 else { return nil }
                    defer { close(fd) }
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let n = Glibc.read(fd, &buffer, buffer.count)
                    return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
                }
                guard let aasa = read("apple-app-site-association"), let links = read("assetlinks.json") else { continue }
                reads.add(1, ordering: .relaxed)
                let writer = aasa.contains("/w0/") ? "w0" : aasa.contains("/w1/") ? "w1" : "?"
                if !links.contains("com.example.\(writer)\"") { mixes.add(1, ordering: .relaxed) }
            }
        }
        reader.start()
        let results = Mutex<[Int]>([])
        let group = DispatchGroup()
        for writer in ["w0", "w1"] {
            group.enter()
            Thread {
                for _ in 0..<40 {
                    let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/\#(writer)/*"}]}]}}"#
                    let links =
                        #","assetlinks":[{"relation":["delegate_permission/common.handle_all_urls"],"target":{"namespace":"android_app","package_name":"com.example.\#(writer)","sha256_cert_fingerprints":["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
                    let status = fixture.put("race.example", aasa: aasa, extra: links).status
                    results.withLock { $0.append(status) }
                }
                group.leave()
            }.start()
        }
        group.wait()
        stop.store(true, ordering: .relaxed)
        #expect(results.withLock { $0 }.allSatisfy { $0 == 200 }, "\(results.withLock { $0 })")
        #expect(mixes.load(ordering: .relaxed) == 0)
        #expect(reads.load(ordering: .relaxed) > 0)
        let aasa = try #require(fixture.file("race.example", "apple-app-site-association"))
        let links = try #require(fixture.file("race.example", "assetlinks.json"))
        #expect(links.contains(aasa.contains("/w0/") ? "com.example.w0\"" : "com.example.w1\""))
        #expect(fixture.entries() == ["race.example"])
    }
}

@Suite struct LostUpdateTests {
    @Test func ofWritersHoldingOneETagExactlyOneWins() throws {
        let fixture = try APIFixture()
        let etag = try #require(fixture.put("a.example").header("etag"))
        let statuses = Mutex<[Int]>([])
        let group = DispatchGroup()
        for writer in 0..<8 {
            group.enter()
            Thread {
                let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/w\#(writer)/*"}]}]}}"#
                let answer = fixture.call("PUT", "/v1/sites/a.example", body: #"{"aasa":\#(aasa)}"#, headers: [("if-match", etag)])
                statuses.withLock { $0.append(answer.status) }
                group.leave()
            }.start()
        }
        group.wait()
        let all = statuses.withLock { $0 }
        #expect(all.filter { $0 == 200 }.count == 1, "\(all)")
        #expect(all.filter { $0 == 412 }.count == 7, "\(all)")
    }
}

@Suite struct PendingClaimTests {
    /// The served state never reloads (`NeverServed`): the ownership stays as it was at start.
    @Test func aNameWrittenButNotYetReloadedIsHeldForTheNextWrite() throws {
        let fixture = try APIFixture(state: { _ in NeverServed() }, servedTimeout: .milliseconds(20))
        #expect(fixture.put("a.example", extra: #","settings":{"aliases":["shared.example"]}"#).status == 202)
        let second = fixture.put("b.example", extra: #","settings":{"aliases":["shared.example"]}"#)
        #expect(second.status == 422, "\(second.text)")
        #expect(!fixture.entries().contains("b.example"))
        // A directory for the name: the first site would lose it.
        #expect(fixture.put("shared.example").status == 422)
        // Removed, the name is free again.
        #expect(fixture.call("DELETE", "/v1/sites/a.example").status == 204)
        #expect(fixture.put("b.example", extra: #","settings":{"aliases":["shared.example"]}"#).status == 202)
    }
}

@Suite struct ListTests {
    @Test func pagesGoInByteOrderWithOpaqueCursors() throws {
        let fixture = try APIFixture()
        let hosts = ["b.customer-a.example", "a.customer-a.example", "z.example", "links.customer-a.com", "a.example"]
        for host in hosts { #expect(fixture.put(host).status == 201) }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let target = "/v1/sites?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = fixture.call("GET", target, token: APIFixture.customerA)
            #expect(page.status == 200)
            let sites = try #require(page.json["sites"] as? [[String: Any]])
            seen += sites.compactMap { $0["host"] as? String }
            #expect(sites.allSatisfy { $0["etag"] is String && $0["served"] as? Bool == true && $0["problems"] as? Int == 0 })
            cursor = page.json["next"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(seen == ["a.customer-a.example", "b.customer-a.example", "links.customer-a.com"])
        let all = fixture.call("GET", "/v1/sites?limit=1000").json["sites"] as? [[String: Any]]
        #expect(all?.compactMap { $0["host"] as? String } == hosts.sorted())
    }

    @Test(arguments: [
        "limit=0", "limit=1001", "limit=-1", "limit=1x", "limit=", "cursor=%%%", "cursor=QQ", "other=1", "limit=99999999999999999999",
    ])
    func aBadQueryIs400(_ query: String) throws {
        let fixture = try APIFixture()
        let answer = fixture.call("GET", "/v1/sites?\(query)")
        #expect(answer.status == 400)
        #expect(answer.errorCode == "bad-request")
    }

    @Test func theLimitsBoundsAreTakenAtN() throws {
        let fixture = try APIFixture()
        #expect(fixture.call("GET", "/v1/sites?limit=1").status == 200)
        #expect(fixture.call("GET", "/v1/sites?limit=1000").status == 200)
    }

    @Test func aPageLooksAtABoundedNumberOfNames() {
        let directory = try! TemporaryDirectoryPath()
        let names = SiteNames(sitesPath: directory.path)
        for i in 0..<30 { mkdir(directory.path + "/s\(String(format: "%03d", i)).example", 0o755) }
        let page = names.page(after: nil, limit: 5, scanning: 10) { $0 == "s025.example" }
        #expect(page.hosts.isEmpty)
        #expect(page.last == "s009.example")
        let next = names.page(after: page.last, limit: 5, scanning: 100) { $0 == "s025.example" }
        #expect(next.hosts == ["s025.example"])
        #expect(next.last == nil)
    }
}

/// A bare temporary directory for unit tests that need only a path.
final class TemporaryDirectoryPath {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "/tenant-api-names-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Whether this process may mount a tmpfs (root in a namespace that allows it): the full-disk
/// test then fills a real filesystem instead of an injected error.
private let canMount: Bool = {
    guard getuid() == 0, let directory = try? TemporaryDirectoryPath() else { return false }
    guard mount("tmpfs", directory.path, "tmpfs", 0, "size=64k") == 0 else { return false }
    umount(directory.path)
    return true
}()

@Suite struct FullDiskTests {
    @Test(.enabled(if: canMount, "needs root and tmpfs")) func aFullTmpfsIs507WithNothingLeftBehind() throws {
        let fixture = try APIFixture(prepare: { dir in
            // sites/ on a 64 KB tmpfs: a site of a few hundred bytes fits, a 200 KB page does not.
            guard mount("tmpfs", dir.path("sites"), "tmpfs", 0, "size=64k") == 0 else { throw CocoaError(.fileWriteUnknown) }
        })
        defer { umount(fixture.sites) }
        #expect(fixture.put("a.example").status == 201)
        let before = fixture.call("GET", "/v1/sites/a.example").header("etag")
        let page = String(repeating: "x", count: 200_000)
        let full = fixture.put("a.example", extra: #","page":"\#(page)""#)
        #expect(full.status == 507, "\(full.text)")
        #expect(full.errorCode == "insufficient-storage")
        #expect(fixture.entries() == ["a.example"])
        #expect(fixture.call("GET", "/v1/sites/a.example").header("etag") == before)
        let created = fixture.put("b.example", extra: #","page":"\#(page)""#)
        #expect(created.status == 507)
        #expect(fixture.entries() == ["a.example"])
    }
}
