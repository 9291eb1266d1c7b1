import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ACME

/// The shared storage directory's layout: names and tokens that could climb out of their
/// folders, the one-file certificate and key, the account key made once by racing replicas.
@Suite("ACME storage layout")
struct ACMEStorageTests {
    @Test("hostile names and tokens never become paths; a wildcard is spelled _wildcard_")
    func hostileNames() throws {
        let dir = try TemporaryDirectory(prefix: "acme-storage")
        let storage = try ACMEStorage(root: dir.path("s"))
        for name in ["../x", "a/b", "", ".hidden", "A.TEST", "a.test\0", "a b", String(repeating: "a", count: 300), "a.test\n"] {
            #expect(throws: ACMEError.self) { try storage.certificatePath(for: name) }
            #expect(throws: ACMEError.self) { try storage.tlsALPNChallengePath(for: name) }
        }
        #expect(try storage.certificatePath(for: "*.users.a.test") == dir.path("s") + "/certificates/_wildcard_.users.a.test.pem")
        // The wildcard's spelling is not a name of its own, and `*` is only a first label.
        for name in ["_wildcard_.users.a.test", "a._wildcard_.test", "a*b.test", "a.*.test", "**.a.test"] {
            #expect(throws: ACMEError.self) { try storage.certificatePath(for: name) }
        }
        for token in ["", "..", "../../etc/passwd", "a/b", "a.b", "a%2fb", "a b", "tok?x", String(repeating: "a", count: 129)] {
            #expect(storage.http01Path(for: token) == nil, "\(token)")
            #expect(storage.http01Answer(token: token) == nil)
        }
        #expect(storage.http01Path(for: "AZaz09-_") != nil)
        try storage.storeHTTP01(token: "tok-1", keyAuthorization: "tok-1.thumb")
        #expect(storage.http01Answer(token: "tok-1") == Array("tok-1.thumb".utf8))
        storage.removeHTTP01(token: "tok-1")
        #expect(storage.http01Answer(token: "tok-1") == nil)
    }

    @Test("a stored certificate is one file: chain then key, split back exactly; a rename is a new version")
    func certificateFile() throws {
        let dir = try TemporaryDirectory(prefix: "acme-storage")
        let storage = try ACMEStorage(root: dir.path("s"))
        let chain = Array(
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"
                .utf8)
        let key = Array("-----BEGIN PRIVATE KEY-----\nCCCC\n-----END PRIVATE KEY-----\n".utf8)
        #expect(try storage.certificate(for: "a.test") == nil)
        #expect(try storage.certificateVersion(for: "a.test") == nil)
        try storage.storeCertificate(name: "a.test", chainPEM: chain, keyPEM: key)
        let first = try #require(try storage.certificate(for: "a.test"))
        let split = try #require(ACMEStorage.split(first.bytes))
        #expect(split.chainPEM == chain)
        #expect(split.keyPEM == key)
        #expect(try storage.certificateVersion(for: "a.test") == first.version)
        let mode = try FileManager.default.attributesOfItem(atPath: try storage.certificatePath(for: "a.test"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try storage.storeCertificate(name: "a.test", chainPEM: chain, keyPEM: key)
        #expect(try storage.certificateVersion(for: "a.test") != first.version)
        // Two keys, no key, no certificate, text around blocks: refused or skipped.
        #expect(ACMEStorage.split(chain + key + key) == nil)
        #expect(ACMEStorage.split(chain) == nil)
        #expect(ACMEStorage.split(key) == nil)
        #expect(ACMEStorage.split(Array("junk\n".utf8) + chain + Array("more junk\n".utf8) + key)?.keyPEM == key)
        #expect(ACMEStorage.split(Array("-----BEGIN CERTIFICATE-----\nAAAA\n".utf8) + key) == nil)
    }

    @Test("replicas racing to make the account key end up with one key")
    func accountKeyRace() throws {
        let dir = try TemporaryDirectory(prefix: "acme-storage")
        let url = try ACMEURL("https://ca.test:14000/dir")
        let thumbprints = Mutex<[String]>([])
        let root = dir.path("s")
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            guard let storage = try? ACMEStorage(root: root), let key = try? storage.accountKey(for: url) else { return }
            thumbprints.withLock { $0.append(key.thumbprint) }
        }
        let seen = thumbprints.withLock { $0 }
        #expect(seen.count == 8)
        #expect(Set(seen).count == 1)
        let storage = try ACMEStorage(root: dir.path("s"))
        #expect(storage.accountKeyPath(for: url).hasPrefix(dir.path("s") + "/accounts/ca.test-"))
        #expect(storage.accountKeyPath(for: url) != storage.accountKeyPath(for: try ACMEURL("https://ca.test:14000/other")))
        // No temporary files are left behind.
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path("s/accounts"))
        #expect(left.count == 1, "\(left)")
    }

    @Test("the DNS hook: arguments as given, a failure's status and output, the time limit, default signals")
    func hook() throws {
        let dir = try TemporaryDirectory(prefix: "acme-hook")
        // The hook's `sleep 30` is the input (a hook that overruns its time limit), not an order
        // of events.
        try dir.write(
            "hook",
            Array(
                "#!/bin/sh\necho \"args:$1|$2|$3\"\n[ \"$1\" = fail ] && { echo oops >&2; exit 3; }\n[ \"$1\" = term ] && kill -TERM $$\n[ \"$1\" = sleep ] && exec sleep 30\nexit 0\n"
                    .utf8))
        chmod(dir.path("hook"), 0o755)
        let ok = try HookProgram.run(dir.path("hook"), ["add", "_acme-challenge.a.test", "v a l"])
        #expect(ok.status == 0)
        #expect(ok.output.contains("args:add|_acme-challenge.a.test|v a l"))
        let failed = try HookProgram.run(dir.path("hook"), ["fail", "n", "v"])
        #expect(failed.status == 3)
        #expect(failed.output.contains("oops"))
        // SIGTERM reaches the hook even when the server blocks it for sigwait.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let terminated = try HookProgram.run(dir.path("hook"), ["term", "n", "v"])
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        #expect(terminated.status == nil)
        let slow = try HookProgram.run(dir.path("hook"), ["sleep", "n", "v"], timeout: 300)
        #expect(slow.timedOut)
        #expect(slow.status == nil)
        #expect(throws: ACMEError.self) { try HookProgram.run(dir.path("missing"), []) }
        // Output beyond the bound is cut.
        try dir.write("loud", Array("#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x\n".utf8))
        chmod(dir.path("loud"), 0o755)
        #expect(try HookProgram.run(dir.path("loud"), []).output.count <= HookProgram.maximumOutputBytes)
    }
}
