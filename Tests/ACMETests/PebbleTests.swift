import Foundation
import SafeText
import TestSupport
import Testing

@testable import ACME

/// The client against a real ACME server: pebble on loopback, with its default 5 % bad-nonce
/// rejections, over HTTPS verified against the root the test made.
@Suite("ACME against pebble", .serialized)
struct PebbleTests {
    @Test("an account is created, found again with the same key (same URL), and not found for another key")
    func account() throws {
        let pebble = try Pebble()
        let key = try AccountKey.generate()
        let client = try pebble.client(key: key)
        let directory = try client.directory()
        #expect(directory.newNonce.text.hasPrefix("https://127.0.0.1:\(pebble.port)/"))
        let created = try client.account(contact: ["mailto:ops@example.com"])
        #expect(created.account.status == .valid && created.account.contact == ["mailto:ops@example.com"])
        let again = try pebble.client(key: key).account(onlyReturnExisting: true)
        #expect(again.url == created.url)
        let sameKeyNewAccount = try pebble.client(key: key).account()
        #expect(sameKeyNewAccount.url == created.url)
        #expect {
            try pebble.client().account(onlyReturnExisting: true)
        } throws: {
            guard case .problem(let problem, let status) = $0 as? ACMEError else { return false }
            return problem.acmeType == "accountDoesNotExist" && status == 400
        }
    }

    @Test("an order for a name: pending, one authorization with http-01, tls-alpn-01 and dns-01 challenges and tokens")
    func order() throws {
        let pebble = try Pebble()
        let client = try pebble.client()
        try client.account()
        let (url, order) = try client.newOrder(names: ["a.example.test"])
        #expect(order.status == .pending && order.identifiers == [ACMEIdentifier(dns: "a.example.test")])
        #expect(order.authorizations.count == 1 && order.finalize.text.hasPrefix("https://127.0.0.1:"))
        #expect(try client.order(url) == order)
        let authz = try client.authorization(order.authorizations[0])
        #expect(authz.identifier.value == "a.example.test" && authz.status == .pending)
        #expect(Set(authz.challenges.map(\.type)) == ["http-01", "tls-alpn-01", "dns-01"])
        for challenge in authz.challenges {
            let token = try #require(challenge.token)
            #expect(token.utf8.count >= 22)
            #expect(client.key.keyAuthorization(token: token).hasPrefix(token + "."))
        }
    }

    @Test("HTTP-01 completes: the key authorization written atomically under a web root is fetched by pebble's VA")
    func http01() throws {
        let root = try TemporaryDirectory(prefix: "acme-http01")
        // A tiny responder: Python's file server over the web root, as the plain listener will
        // answer from the storage directory's challenge answers. It binds port 0 and announces
        // its port, which pebble's VA then connects to (pebble never binds it).
        let responder = Process()
        responder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        responder.arguments = [
            Tool.python3, "-c",
            ReadyFile.python + """
                import functools, http.server, sys
                handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
                announce(server.server_address[1], sys.argv[1])
                server.serve_forever()
                """,
            root.path("port"), root.path,
        ]
        responder.standardOutput = FileHandle.nullDevice
        responder.standardError = FileHandle.nullDevice
        try responder.run()
        defer {
            responder.killAndWait()
        }
        let httpPort = try #require(ReadyFile.port(root.path("port"), of: responder))
        let pebble = try Pebble(resolveEverythingToLoopback: true, httpPort: httpPort)
        let client = try pebble.client()
        try client.account()
        let (orderURL, order) = try client.newOrder(names: ["http01.example.test"])
        let authorization = try client.authorization(order.authorizations[0])
        let challenge = try #require(authorization.challenges.first { $0.type == "http-01" })
        let token = try #require(challenge.token)
        try FileManager.default.createDirectory(atPath: root.path(".well-known/acme-challenge"), withIntermediateDirectories: true)
        try AtomicFile.write(
            Array(client.key.keyAuthorization(token: token).utf8), to: root.path(".well-known/acme-challenge/\(token)"), mode: 0o644)
        _ = try client.respond(to: challenge.url)
        var last = authorization.status
        let settled = try eventually(attempts: 100, interval: 0.1) {
            last = try client.authorization(order.authorizations[0]).status
            return last != .pending
        }
        #expect(settled && last == .valid, "authorization is \(last)")
        #expect(try client.order(orderURL).status == .ready)
    }

    @Test("with pebble's default 5 % bad-nonce rejections, 100 requests in a row all succeed through retries")
    func badNonceRetries() throws {
        let pebble = try Pebble()
        let client = try pebble.client()
        try client.account()
        let (url, _) = try client.newOrder(names: ["n.example.test"])
        for _ in 0..<100 { _ = try client.order(url) }
    }

    @Test("a CA that rejects every nonce fails after the bounded retries with its badNonce problem")
    func badNonceBound() throws {
        let pebble = try Pebble(nonceReject: 100)
        #expect {
            try pebble.client().account()
        } throws: {
            guard case .problem(let problem, _) = $0 as? ACMEError else { return false }
            return problem.isBadNonce
        }
    }

    @Test("External Account Binding: refused without it, accepted with pebble's example key")
    func externalAccountBinding() throws {
        let pebble = try Pebble(requireEAB: true)
        let client = try pebble.client()
        #expect(try client.directory().externalAccountRequired)
        #expect {
            try client.account()
        } throws: {
            guard case .problem(let problem, _) = $0 as? ACMEError else { return false }
            return problem.acmeType == "externalAccountRequired"
        }
        let eab = try ACMEClient.ExternalAccountBinding(keyID: Pebble.eabKeyID, macKeyBase64URL: Pebble.eabMACKey)
        #expect(try client.account(externalAccountBinding: eab).account.status == .valid)
    }

    @Test("HTTPS is verified: without the test root (system roots only) pebble's certificate is refused")
    func verification() throws {
        let pebble = try Pebble()
        let client = ACMEClient(directoryURL: pebble.directoryURL, key: try AccountKey.generate(), http: try HTTPSClient())
        #expect {
            try client.directory()
        } throws: {
            guard case .transport(let text) = $0 as? ACMEError else { return false }
            return text.contains("certificate")
        }
    }
}
