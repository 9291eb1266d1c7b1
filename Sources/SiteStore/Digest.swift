import CAASAOpenSSL
import HTTPCore

/// SHA-256 through libcrypto, for strong ETags and certificate identities.
enum Digest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &out, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "SHA-256 failed")
        return out
    }

    /// Lower-case hex of a digest, through HTTPCore's one encoder.
    static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes) }
}
