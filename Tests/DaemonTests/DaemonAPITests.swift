import ACME
import Foundation
import Glibc
import Logging
import TenantAPI
import TestSupport
import Testing

@testable import Daemon

/// The tenant API's handler over a running daemon's served state (`DaemonServedState`): a write
/// answers once the watcher's reload serves it, checked against the ownership the last reload
/// published.
@Suite struct DaemonAPITests {
    @Test func aWriteIsAnsweredOnceTheDaemonServesIt() throws {
        let (folder, base) = try DaemonTests.oneSite()
        try folder.write("config/sites/a.test/site.yaml", Array("aliases: [www.a.test]\n".utf8))
        let token = Self.token
        let (daemon, _, api) = try Self.daemonWithAPI(folder, base)
        defer { daemon.stop(drain: false) }
        func call(_ method: String, _ host: String, _ body: String? = nil) -> APIResponse {
            var headers = [(name: "authorization", value: "Bearer \(token)")]
            if body != nil { headers.append((name: "content-type", value: "application/json")) }
            return api.handle(APIRequest(method: method, target: "/v1/sites/\(host)", headers: headers, body: Array((body ?? "").utf8)))
        }
        let created = call("PUT", "b.test", #"{"aasa":\#(DaemonTests.aasa)}"#)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        #expect(daemon.snapshot?.sites["b.test"] != nil)
        // An alias a.test holds, as the last reload decided.
        let taken = call("PUT", "c.test", #"{"aasa":\#(DaemonTests.aasa),"settings":{"aliases":["www.a.test"]}}"#)
        #expect(taken.status == 422)
        #expect(call("GET", "c.test").status == 404)
        // A change of aliases alone moves no file: the answer still waits for the reload that
        // serves the new name.
        let aliased = call("PUT", "b.test", #"{"aasa":\#(DaemonTests.aasa),"settings":{"aliases":["www.b.test"]}}"#)
        #expect(aliased.status == 200)
        #expect(daemon.snapshot?.sites["b.test"]?.hosts.map(\.name).contains("www.b.test") == true)
        #expect(call("DELETE", "b.test").status == 204)
        #expect(daemon.snapshot?.sites["b.test"] == nil)
    }

    @Test func anAPIThatCannotListenFailsTheStart() throws {
        let (folder, base) = try DaemonTests.oneSite()
        try folder.write("tokens.yaml", Array("tokens: []\n".utf8))
        // A port another socket listens on.
        let held = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(held) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(held, $0, length) == 0 && listen(held, 1) == 0 && getsockname(held, $0, &length) == 0
            }
        }
        try #require(bound)
        var settings = base
        settings.api.listen = "127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        settings.api.tokensFile = folder.path("tokens.yaml")
        let daemon = Daemon(
            configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-api-test"), output: { _ in })
        #expect(throws: StartFailure.self) { try daemon.start() }
        #expect(daemon.running == nil)
    }

    /// Replicas on one volume: another replica's API adds a site; the reload here that serves it
    /// already holds the name back from automatic certificates (its record was written before
    /// the site), not only after the checker's next read of the records.
    @Test func aNameAnotherReplicaAddsIsHeldBackFromTheReloadThatServesIt() throws {
        let (folder, base) = try DaemonTests.oneSite()
        let token = Self.token
        // The other replica's records and key, there before this one starts.
        let other = try VerificationStore(configDirectory: folder.path("config"))
        let (daemon, running, api) = try Self.daemonWithAPI(folder, base, verification: other)
        defer { daemon.stop(drain: false) }
        let put = api.handle(
            APIRequest(
                method: "PUT", target: "/v1/sites/b.test",
                headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")],
                body: Array(#"{"aasa":\#(DaemonTests.aasa)}"#.utf8)))
        #expect(put.status == 201, "\(String(decoding: put.body, as: UTF8.self))")
        let snapshot = try #require(daemon.snapshot)
        #expect(snapshot.sites["b.test"] != nil)
        #expect(other.blocks("b.test"))
        let wanted = running.acmeNames.names(in: snapshot)
        #expect(wanted["b.test"] == nil, "\(wanted)")
    }

    /// The same when this replica (its API off) started before any API made the records'
    /// directory: it reads the records from when they appear, and makes nothing itself.
    @Test func aReplicaStartedBeforeTheFirstAPIWriteHoldsItsNamesBackToo() throws {
        let (folder, base) = try DaemonTests.oneSite()
        let directory = folder.path("config") + "/" + VerificationStore.directoryName
        let (daemon, running, _) = try Self.daemonWithAPI(folder, base)
        defer { daemon.stop(drain: false) }
        #expect(!FileManager.default.fileExists(atPath: directory), "a replica whose API does not write made \(directory)")
        // The other replica's API starts now: its records and key appear after this one started.
        let other = try VerificationStore(configDirectory: folder.path("config"))
        let api = TenantAPI(
            configuration: .init(configDirectory: folder.path("config"), verification: other),
            tokens: APITokenStore(path: folder.path("tokens.yaml"), logger: Logger(label: "other-replica")),
            state: DaemonServedState(store: running.store, sites: running.sites, automatic: false),
            logger: Logger(label: "other-replica"))
        let put = api.handle(
            APIRequest(
                method: "PUT", target: "/v1/sites/b.test",
                headers: [("authorization", "Bearer \(Self.token)"), ("content-type", "application/json")],
                body: Array(#"{"aasa":\#(DaemonTests.aasa)}"#.utf8)))
        #expect(put.status == 201, "\(String(decoding: put.body, as: UTF8.self))")
        let snapshot = try #require(daemon.snapshot)
        #expect(snapshot.sites["b.test"] != nil)
        let wanted = running.acmeNames.names(in: snapshot)
        #expect(wanted["b.test"] == nil, "\(wanted)")
    }

    /// The operator's error text names paths and a DNS hook's command line and output; a tenant
    /// reads only the CA's words about its name, or a category.
    @Test func certificateErrorsReachTheTenantAsTheCAsWordsOrACategory() throws {
        let (folder, base) = try DaemonTests.oneSite()
        let (daemon, running, _) = try Self.daemonWithAPI(folder, base)
        defer { daemon.stop(drain: false) }
        let hook = ACMEError.storage("the dns hook /etc/aasad/dns-hook add _acme-challenge.a.test failed (exit 1): API_KEY=s3cret")
        let refused = ACMEError.invalid(
            what: "the http-01 challenge", problem: ACMEProblem(type: "urn:ietf:params:acme:error:connection", detail: "Timeout"))
        for (error, shown) in [(hook, ACMEError.serverSideSummary), (refused, refused.description)] {
            let state = DaemonServedState(store: running.store, sites: running.sites, automatic: true) { name in
                CertificateStatus(name: name, state: .failed, error: "\(error)", errorForTenant: error.tenantSummary, nextAttempt: 0)
            }
            let served = try #require(state.served(directory: "a.test"))
            #expect(served.certificateNames.map(\.error) == [shown])
        }
        #expect(!ACMEError.transport("Failed to connect to 10.0.0.7 port 14000").tenantSummary.contains("10.0.0.7"))
        #expect(!ACMEError.crypto("EVP_PKEY at /var/lib/aasad/account.key").tenantSummary.contains("/var/lib"))
    }

    static let token = "daemon-api-test-token"

    /// A watching daemon over `folder`'s config, started, and a tenant API (token `token`, every
    /// host) over its served state, as another process or replica on the directory would be.
    static func daemonWithAPI(
        _ folder: TemporaryDirectory, _ base: ServerSettings, verification: VerificationStore? = nil
    ) throws -> (Daemon, Daemon.Running, TenantAPI) {
        try folder.write(
            "tokens.yaml",
            Array("tokens:\n  - name: t\n    sha256: \(sha256(token))\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        var settings = base
        settings.watch = true
        let logger = Logger(label: "daemon-api-test")
        let daemon = Daemon(configDirectory: folder.path("config"), settings: settings, logger: logger, output: { _ in })
        try daemon.start()
        guard let running = daemon.running else {
            daemon.stop(drain: false)
            throw CocoaError(.featureUnsupported)
        }
        let api = TenantAPI(
            configuration: .init(configDirectory: folder.path("config"), verification: verification),
            tokens: APITokenStore(path: folder.path("tokens.yaml"), logger: logger),
            state: DaemonServedState(store: running.store, sites: running.sites, automatic: false), logger: logger)
        return (daemon, running, api)
    }

    static func sha256(_ text: String) -> String {
        let path = NSTemporaryDirectory() + "/sha-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return String(output.prefix(64))
    }
}
