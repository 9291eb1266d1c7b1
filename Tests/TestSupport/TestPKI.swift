import Foundation
import Synchronization

/// Self-signed test certificates made with the openssl command line (independent of the code under
/// test), and the pairs a whole test run shares.
///
/// An RSA 2048 key takes openssl about a second of wall time on the 2-core test machine while
/// other tests run (a P-256 key a few milliseconds), and every end-to-end config has a site with
/// an RSA certificate: `shared` makes such a pair once per test process and hands out its bytes,
/// so only a test that needs a pair of its own (a rotation, a fingerprint change) pays for one.
package enum TestPKI {
    /// The key a pair is made with.
    package enum Key: Sendable, Hashable {
        /// P-256: cheap to make; what every test uses unless RSA itself is tested.
        case ecdsa
        /// RSA 2048: for the tests about RSA (a server presenting an ECDSA and an RSA certificate).
        case rsa

        var arguments: [String] {
            switch self {
            case .ecdsa: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
            case .rsa: ["-newkey", "rsa:2048"]
            }
        }
    }

    /// A certificate and its key, as PEM.
    package struct Pair: Sendable {
        package var certificatePEM: [UInt8]
        package var keyPEM: [UInt8]

        /// Writes key.pem then cert.pem into `directory` (made if missing), each written in the
        /// system's temporary directory first and renamed in, as a deploy tool would: a watching
        /// server never reads half a file, nor sees a stray file beside them. `directory` must be
        /// on the temporary directory's file system (every test directory is).
        package func write(into directory: String) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (name, bytes) in [("key.pem", keyPEM), ("cert.pem", certificatePEM)] {
                let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("aasad-\(UUID().uuidString)-\(name)").path
                try Data(bytes).write(to: URL(fileURLWithPath: scratch))
                guard rename(scratch, directory + "/" + name) == 0 else { throw Failure("cannot rename \(scratch) into place") }
            }
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// A new self-signed pair: the first name is the subject's CN, every name goes into
    /// subjectAltName; valid from now for `days`.
    package static func make(_ names: [String], key: Key = .ecdsa, days: Int = 2) throws -> Pair {
        let directory = try TemporaryDirectory(prefix: "aasad-test-pair")
        let made = try Tool.run(
            "openssl",
            ["req", "-x509"] + key.arguments + [
                "-nodes", "-days", String(days), "-subj", "/CN=\(names.first ?? "")", "-addext",
                "subjectAltName=" + names.map { "DNS:\($0)" }.joined(separator: ","), "-keyout", directory.path("key.pem"),
                "-out", directory.path("cert.pem"),
            ])
        guard made.status == 0 else { throw Failure("openssl could not make a test pair for \(names): \(made.stderr)") }
        return Pair(
            certificatePEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("cert.pem")))),
            keyPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("key.pem")))))
    }

    /// The pair for `names` and `key` this test process shares, made on first use (under a lock,
    /// so tests asking at once wait for the one being made). Only for tests that do not care
    /// whether another test holds the same pair.
    package static func shared(_ names: [String], key: Key = .ecdsa) throws -> Pair {
        let index = SharedKey(names: names, key: key)
        let slot = made.withLock { made in
            if let slot = made[index] { return slot }
            let slot = Slot()
            made[index] = slot
            return slot
        }
        return try slot.value { try make(names, key: key) }
    }

    private struct SharedKey: Hashable, Sendable {
        var names: [String]
        var key: Key
    }

    /// One shared pair, made once by whichever test asks first.
    private final class Slot: Sendable {
        private let pair = Mutex<Pair?>(nil)
        func value(_ make: () throws -> Pair) throws -> Pair {
            try pair.withLock { pair in
                if let pair { return pair }
                let new = try make()
                pair = new
                return new
            }
        }
    }

    private static let made = Mutex<[SharedKey: Slot]>([:])
}
