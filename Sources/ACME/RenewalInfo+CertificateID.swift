import CAASAOpenSSL
import SafeText

extension RenewalInfo {
    /// RFC 9773 §4.1: a certificate's identifier in `renewalInfo` URLs: base64url of its
    /// Authority Key Identifier's keyIdentifier, a dot, and base64url of its serial number's DER
    /// content octets (without tag and length, with the leading zero a positive number may
    /// need). nil for a certificate without an Authority Key Identifier, which ARI cannot name.
    public static func certificateID(leafDER: [UInt8]) throws(ACMEError) -> String? {
        guard let x = x509(der: leafDER) else { throw .crypto("the certificate cannot be decoded") }
        defer { X509_free(x) }
        guard let keyID = X509_get0_authority_key_id(x), let keyBytes = ASN1_STRING_get0_data(keyID) else { return nil }
        let length = Int(ASN1_STRING_length(keyID))
        guard length > 0 else { return nil }
        let authority = Array(UnsafeBufferPointer(start: keyBytes, count: length))
        guard let serial = X509_get0_serialNumber(x) else { throw .crypto("the certificate has no serial number") }
        let der = try derEncoding { i2d_ASN1_INTEGER(serial, $0) }
        // DER INTEGER: tag 0x02, then a short or long form length, then the content octets.
        guard der.count >= 3, der[0] == 0x02 else { throw .crypto("the serial number's DER encoding is not an INTEGER") }
        var contentStart = 2
        if der[1] & 0x80 != 0 { contentStart += Int(der[1] & 0x7F) }
        guard contentStart < der.count else { throw .crypto("the serial number's DER encoding is truncated") }
        return Base64URL.encode(authority) + "." + Base64URL.encode(der[contentStart...])
    }
}

extension ACMEClient {
    /// The CA's renewal window for a certificate (RFC 9773 §4.2, a plain GET) and how long to
    /// wait before asking again (its Retry-After); nil when the CA offers no `renewalInfo` or
    /// the certificate has no Authority Key Identifier.
    public func renewalInfo(leafDER: [UInt8], now: Int64) throws(ACMEError) -> (window: RenewalInfo, retryAfter: Int64?)? {
        guard let base = try directory().renewalInfo, let id = try RenewalInfo.certificateID(leafDER: leafDER) else { return nil }
        let trimmed = base.text.hasSuffix("/") ? String(base.text.dropLast()) : base.text
        let response = try http.request(.get, try ACMEURL(trimmed + "/" + id, what: "renewalInfo URL"))
        guard response.isSuccess else { throw Self.failure(response, what: "renewal information") }
        return (try RenewalInfo(body: response.body), response.headers.retryAfter(now: now))
    }
}
