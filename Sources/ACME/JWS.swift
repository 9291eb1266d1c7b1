import CAASAOpenSSL
import SafeText
import StrictJSON
import TLS

/// JWS in the flattened JSON serialization (RFC 7515 §7.2.2), the body of every ACME POST
/// (RFC 8555 §6.2): a protected header naming the URL and a fresh nonce, the account's key as
/// `jwk` (newAccount) or its URL as `kid` (everything after).
public enum JWS {
    /// Who signs: the key alone (newAccount, §6.2 `jwk`) or the account's URL (`kid`).
    public enum Signer {
        case jwk
        case kid(ACMEURL)
    }

    /// A signed request body. `payload` nil is POST-as-GET (§6.3: the empty string, not `{}`).
    public static func request(key: AccountKey, signer: Signer, url: ACMEURL, nonce: String, payload: String?) throws(ACMEError) -> [UInt8]
    {
        let identity =
            switch signer {
            case .jwk: #""jwk":\#(key.jwk)"#
            case .kid(let account): #""kid":\#(JSONValue.quote(account.text))"#
            }
        let header = #"{"alg":"ES256",\#(identity),"nonce":\#(JSONValue.quote(nonce)),"url":\#(JSONValue.quote(url.text))}"#
        return try flattened(header: header, payload: payload ?? "") { (input) throws(ACMEError) in try key.sign(input) }
    }

    /// The External Account Binding (RFC 8555 §7.3.4): a JWS over the account key's JWK, signed
    /// with HS256 (RFC 7518 §3.2) by the MAC key the CA gave out of band, as the
    /// `externalAccountBinding` member of the newAccount payload.
    public static func externalAccountBinding(key: AccountKey, keyID: String, macKey: [UInt8], url: ACMEURL) throws(ACMEError) -> String {
        let header = #"{"alg":"HS256","kid":\#(JSONValue.quote(keyID)),"url":\#(JSONValue.quote(url.text))}"#
        let body = try flattened(header: header, payload: key.jwk) { (input) throws(ACMEError) in try hmacSHA256(key: macKey, input) }
        return String(decoding: body, as: UTF8.self)
    }

    /// `{"protected":…,"payload":…,"signature":…}` with the signature over
    /// `base64url(header) '.' base64url(payload)` (RFC 7515 §5.1).
    static func flattened(header: String, payload: String, sign: ([UInt8]) throws(ACMEError) -> [UInt8]) throws(ACMEError) -> [UInt8] {
        let protected = Base64URL.encode(header.utf8)
        let body = Base64URL.encode(payload.utf8)
        let signature = try sign(Array((protected + "." + body).utf8))
        return Array(#"{"protected":"\#(protected)","payload":"\#(body)","signature":"\#(Base64URL.encode(signature))"}"#.utf8)
    }

    /// HMAC-SHA256 through OpenSSL's one-shot HMAC.
    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) throws(ACMEError) -> [UInt8] {
        guard !key.isEmpty, let keyLength = Int32(exactly: key.count) else { throw .crypto("the EAB MAC key is empty or too long") }
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard HMAC(EVP_sha256(), key, keyLength, message, message.count, &out, &length) != nil, length == 32 else {
            throw .crypto("HMAC: \(TLSError.openSSLReasons())")
        }
        return out
    }
}
