import CAASAOpenSSL
import Foundation
import SafeText
import SiteStore

/// The list's `next` cursor: the last host a page looked at, sealed with AES-256-GCM (NIST SP
/// 800-38D) under a key drawn when the process starts, with the token's name as associated data.
/// The host may belong to another tenant (a page stops at `TenantAPI.maximumNamesScanned` names,
/// whoever's they are), so a client must not read it; a client must not forge one either, to
/// probe which names exist; and a cursor given to one token is refused for another. A restart
/// draws a new key: old cursors then answer 400 and the client lists again from the start.
enum ListCursor {
    /// AES-256 key bytes.
    static let keyLength = 32
    /// GCM nonce bytes: 96 bits, the length SP 800-38D §8.2 recommends; random per cursor (at
    /// most 2^32 seals per key keep the collision chance negligible, §8.3; a process hands out
    /// far fewer).
    static let nonceLength = 12
    /// GCM tag bytes: the full 128 bits.
    static let tagLength = 16
    /// Longest cursor text read: nonce, the longest host name, tag, in unpadded base64url. A
    /// longer text was not made here and is refused before any decoding.
    static let maximumTextLength = ((nonceLength + HostName.maximumLength + tagLength) * 4 + 2) / 3

    /// Drawn once per process from OpenSSL's CSPRNG.
    static let key: [UInt8] = {
        var bytes = [UInt8](repeating: 0, count: keyLength)
        precondition(RAND_bytes(&bytes, Int32(keyLength)) == 1, "no randomness for the list cursor key")
        return bytes
    }()

    /// The sealed cursor for `host`, usable only by the token named `token`.
    static func seal(_ host: String, token: String) -> String {
        var nonce = [UInt8](repeating: 0, count: nonceLength)
        precondition(RAND_bytes(&nonce, Int32(nonceLength)) == 1, "no randomness for a list cursor")
        guard let sealed = crypt(encrypt: true, nonce: nonce, input: Array(host.utf8), aad: Array(token.utf8), tag: nil) else {
            // Encryption with a valid key and nonce fails only when libcrypto cannot allocate.
            preconditionFailure("AES-256-GCM failed")
        }
        return Base64URL.encode(nonce + sealed.output + sealed.tag)
    }

    /// The host a cursor given to the token named `token` holds, or nil when the text was not
    /// sealed here for that token (forged, altered, another token's, or from before a restart).
    static func open(_ text: Substring, token: String) -> String? {
        guard text.utf8.count <= maximumTextLength, let bytes = Base64URL.decode(text.utf8),
            bytes.count > nonceLength + tagLength
        else { return nil }
        let nonce = Array(bytes.prefix(nonceLength))
        let tag = Array(bytes.suffix(tagLength))
        let body = Array(bytes.dropFirst(nonceLength).dropLast(tagLength))
        guard let opened = crypt(encrypt: false, nonce: nonce, input: body, aad: Array(token.utf8), tag: tag) else { return nil }
        let host = String(decoding: opened.output, as: UTF8.self)
        return APIHostName.problem(Substring(host)) == nil ? host : nil
    }

    /// One AES-256-GCM pass through EVP; on decryption `tag` is checked and nil means it failed.
    private static func crypt(encrypt: Bool, nonce: [UInt8], input: [UInt8], aad: [UInt8], tag: [UInt8]?) -> (
        output: [UInt8], tag: [UInt8]
    )? {
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce, encrypt ? 1 : 0) == 1 else { return nil }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_CipherUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { return nil }
        }
        // GCM is a stream mode: the output is as long as the input.
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        if !input.isEmpty {
            guard EVP_CipherUpdate(ctx, &output, &written, input, Int32(input.count)) == 1 else { return nil }
        }
        var tagBytes = tag ?? [UInt8](repeating: 0, count: tagLength)
        if !encrypt {
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tagBytes) == 1 else { return nil }
        }
        var final: Int32 = 0
        let finished = output.withUnsafeMutableBufferPointer { buffer in
            EVP_CipherFinal_ex(ctx, buffer.baseAddress! + Int(written), &final)
        }
        guard finished == 1 else { return nil }
        if encrypt {
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tagBytes) == 1 else { return nil }
        }
        return (Array(output.prefix(Int(written + final))), tagBytes)
    }
}
