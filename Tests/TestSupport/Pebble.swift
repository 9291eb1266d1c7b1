import Foundation

/// pebble (Let's Encrypt's test CA, Debian package `pebble`) started on loopback for one test and
/// stopped when the value is released: its own TLS certificate made by the openssl command line,
/// PEBBLE_VA_NOSLEEP=1, and pebble's default 5 % bad-nonce rejections unless `nonceReject` says.
package final class Pebble {
    package let folder: TemporaryDirectory
    /// The ACME server's port. Every port here (but an `httpPort` given to init) is picked free
    /// (`Loopback.unusedPort`) before pebble binds it, since pebble and challtestsrv cannot report
    /// a port 0 bound for them (their logs print the address as configured, `127.0.0.1:0`):
    /// start-up proves each listener is theirs and starts again on new ports when another process
    /// took one meanwhile.
    package private(set) var port = 0
    /// Where pebble's VA sends HTTP-01 validation requests (on the address the name resolves to).
    /// pebble only connects there: a test whose responder bound port 0 passes its port to init.
    package private(set) var httpPort = 0
    /// The responder's port the test gave, kept across start attempts.
    private let givenHTTPPort: Int?
    /// Where pebble's VA makes TLS-ALPN-01 validation handshakes.
    package private(set) var tlsPort = 0
    /// pebble's management interface (HTTPS, its own certificate): `/roots/0` is the root that
    /// signs what it issues.
    package private(set) var managementPort = 0
    /// pebble-challtestsrv's management API (plain HTTP), when it answers challenges.
    package private(set) var challengeManagementPort = 0
    private(set) var process = Process()
    /// pebble-challtestsrv as pebble's DNS server, answering 127.0.0.1 for every name, when asked;
    /// with `answerChallenges` also the HTTP-01 responder on `httpPort` and the dns-01 TXT records,
    /// both set through its management API.
    private(set) var dns: Process?

    /// How many times start-up picks new ports after one was taken by another process: each try
    /// loses only when another test binds one of its ports (five, six with DNS) in the instant
    /// between pick and bind.
    static let startAttempts = 3

    /// The directory URL.
    package var directory: String { "https://127.0.0.1:\(port)/dir" }
    /// The root that signs pebble's HTTPS certificate (what `acme.directory-ca` names).
    package var caFile: String { folder.path("ca.pem") }

    /// pebble's example EAB key (/usr/share/doc/pebble/examples).
    package static let eabKeyID = "kid-1"
    package static let eabMACKey = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"

    /// `httpPort` is where the test's own HTTP-01 responder already listens (one that bound
    /// port 0 and announced it): never with `answerChallenges`, where challtestsrv answers there.
    /// Throws when no attempt had pebble and challtestsrv listen on ports of their own.
    package init(
        requireEAB: Bool = false, nonceReject: Int? = nil, resolveEverythingToLoopback: Bool = false, answerChallenges: Bool = false,
        httpPort: Int? = nil
    )
        throws
    {
        if answerChallenges, httpPort != nil { throw PebbleError("challtestsrv answers HTTP-01 on a port of its own") }
        givenHTTPPort = httpPort
        folder = try TemporaryDirectory(prefix: "acme-pebble")
        try Self.makeCertificates(in: folder)
        FileManager.default.createFile(atPath: folder.path("pebble.log"), contents: nil)
        for _ in 1...Self.startAttempts {
            if try start(
                requireEAB: requireEAB, nonceReject: nonceReject, withDNS: resolveEverythingToLoopback || answerChallenges,
                answerChallenges: answerChallenges)
            {
                return
            }
            killAll()
        }
        throw PebbleError("pebble or challtestsrv did not listen on its own ports: \(log())")
    }

    /// Starts challtestsrv (`withDNS`) and pebble on newly picked ports; whether each listens on
    /// its own.
    private func start(requireEAB: Bool, nonceReject: Int?, withDNS: Bool, answerChallenges: Bool) throws -> Bool {
        port = Loopback.unusedPort()
        httpPort = givenHTTPPort ?? Loopback.unusedPort()
        tlsPort = Loopback.unusedPort()
        managementPort = Loopback.unusedPort()
        challengeManagementPort = Loopback.unusedPort()
        process = Process()
        dns = nil
        var arguments = ["pebble", "-config", folder.path("pebble.json")]
        var dnsPorts: [Int] = []
        if withDNS {
            let dnsPort = Loopback.unusedPort()
            let dns = Process()
            dns.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            dns.arguments = [
                "pebble-challtestsrv", "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", "127.0.0.1:\(dnsPort)",
                "-http01", answerChallenges ? "127.0.0.1:\(httpPort)" : "", "-https01", "", "-tlsalpn01", "",
                "-management", "127.0.0.1:\(challengeManagementPort)",
            ]
            dns.standardOutput = FileHandle.nullDevice
            dns.standardError = FileHandle.nullDevice
            try dns.run()
            self.dns = dns
            arguments += ["-dnsserver", "127.0.0.1:\(dnsPort)"]
            dnsPorts = [challengeManagementPort, dnsPort] + (answerChallenges ? [httpPort] : [])
        }
        let eab =
            requireEAB
            ? #""externalAccountBindingRequired": true, "externalAccountMACKeys": {"\#(Self.eabKeyID)": "\#(Self.eabMACKey)"}"#
            : #""externalAccountBindingRequired": false"#
        let config = """
            {"pebble": {"listenAddress": "127.0.0.1:\(port)", "managementListenAddress": "127.0.0.1:\(managementPort)",
              "certificate": "\(folder.path("cert.pem"))", "privateKey": "\(folder.path("key.pem"))",
              "httpPort": \(httpPort), "tlsPort": \(tlsPort), "ocspResponderURL": "", \(eab)}}
            """
        try folder.write("pebble.json", Array(config.utf8))
        let logFile = try FileHandle(forWritingTo: folder.url.appendingPathComponent("pebble.log"))
        try logFile.seekToEnd()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PEBBLE_VA_NOSLEEP"] = "1"
        if let nonceReject { environment["PEBBLE_WFE_NONCEREJECT"] = String(nonceReject) }
        process.environment = environment
        process.standardOutput = logFile
        process.standardError = logFile
        try process.run()
        if let dns, !Loopback.listens(dns, on: dnsPorts) { return false }
        return Loopback.listens(process, on: [port, managementPort])
    }

    private func killAll() {
        for child in [process, dns].compactMap({ $0 }) { child.killAndWait() }
    }

    deinit {
        // SIGKILL, as HTTPSClientTests does: pebble keeps nothing worth a clean stop.
        killAll()
    }

    /// Stops pebble (and challtestsrv) now, as a CA outage would.
    package func stop() {
        process.killAndWait()
    }

    /// Stops pebble's process without ending it (SIGSTOP) until `resume`: a request under way
    /// waits, as an order in flight against a slow CA does.
    package func suspend() { kill(process.processIdentifier, SIGSTOP) }

    package func resume() { kill(process.processIdentifier, SIGCONT) }

    /// Makes challtestsrv answer `host`'s A queries with `address` (pebble-challtestsrv's
    /// `/add-a`): a name whose validation reaches nothing (127.0.0.2) has every order fail.
    package func resolve(_ host: String, to address: String) throws {
        let added = try Tool.run(
            "curl",
            [
                "-sS", "--fail", "-d", #"{"host":"\#(host).","addresses":["\#(address)"]}"#,
                "http://127.0.0.1:\(challengeManagementPort)/add-a",
            ])
        guard added.status == 0 else { throw PebbleError("challtestsrv refused \(host): \(added.stderr)") }
    }

    /// Certificates pebble issued (its log's `Issued certificate serial` lines): orders spent,
    /// counted at the CA.
    package func issuedCount() -> Int { log().components(separatedBy: "Issued certificate serial").count - 1 }

    package func log() -> String { (try? String(contentsOfFile: folder.path("pebble.log"), encoding: .utf8)) ?? "" }

    /// The root pebble signs issued chains with (its management interface's `/roots/0`).
    package func issuingRoot() throws -> [UInt8] {
        let result = try Tool.run("curl", ["-sS", "--fail", "--cacert", caFile, "https://127.0.0.1:\(managementPort)/roots/0"])
        guard result.status == 0 else { throw PebbleError("pebble's /roots/0: \(result.stderr)") }
        return result.stdout
    }

    /// A CA and a leaf for 127.0.0.1 and localhost signed by it.
    package static func makeCertificates(in dir: TemporaryDirectory) throws {
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=pebble test root",
                "-days", "2", "-keyout", dir.path("ca.key"), "-out", dir.path("ca.pem"),
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
                "-keyout", dir.path("key.pem"), "-out", dir.path("leaf.csr"),
            ],
        ]
        for step in steps {
            let result = try Tool.run("openssl", step)
            guard result.status == 0 else { throw PebbleError("openssl \(step[0]): \(result.stderr)") }
        }
        try dir.write("ext.cnf", Array("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8))
        let sign = try Tool.run(
            "openssl",
            [
                "x509", "-req", "-in", dir.path("leaf.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"),
                "-CAcreateserial", "-days", "2", "-extfile", dir.path("ext.cnf"), "-out", dir.path("cert.pem"),
            ])
        guard sign.status == 0 else { throw PebbleError("openssl x509: \(sign.stderr)") }
    }
}

/// pebble or openssl failed while setting up a test.
package struct PebbleError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
