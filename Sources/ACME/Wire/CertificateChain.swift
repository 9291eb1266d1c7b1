import CAASAOpenSSL

/// An issued chain as the CA sent it (RFC 8555 §9.1, `application/pem-certificate-chain`): PEM
/// certificates, the leaf first, and nothing but white space around them (RFC 7468 §5's
/// explanatory text is refused: a chain file is written to disk and loaded by the server, and
/// what is not a certificate has no business there). Every certificate is decoded by OpenSSL.
public struct CertificateChain: Sendable, Equatable {
    /// Each certificate's DER bytes, leaf first.
    public let certificates: [[UInt8]]
    /// The chain re-encoded as PEM from the DER, one block after another: the bytes stored.
    public let pem: [UInt8]

    private static let begin = Array("-----BEGIN CERTIFICATE-----".utf8)
    private static let end = Array("-----END CERTIFICATE-----".utf8)

    public init(pem body: some Collection<UInt8>) throws(ACMEError) {
        let bytes = Array(body)
        guard bytes.count <= ACMELimits.maximumBodyBytes else {
            throw .malformed(what: "certificate chain", reason: "it is over \(ACMELimits.maximumBodyBytes) bytes")
        }
        var certificates: [[UInt8]] = []
        var i = 0
        while true {
            while i < bytes.count, Self.isSpace(bytes[i]) { i += 1 }
            guard i < bytes.count else { break }
            guard bytes[i...].starts(with: Self.begin) else {
                throw .malformed(what: "certificate chain", reason: "byte \(i) starts neither a certificate nor white space")
            }
            guard certificates.count < ACMELimits.maximumChainCertificates else {
                throw .malformed(what: "certificate chain", reason: "more than \(ACMELimits.maximumChainCertificates) certificates")
            }
            let bodyStart = i + Self.begin.count
            guard let endAt = Self.find(Self.end, in: bytes, from: bodyStart) else {
                throw .malformed(what: "certificate chain", reason: "a certificate has no END line")
            }
            let blockEnd = endAt + Self.end.count
            certificates.append(try Self.decode(bytes[i..<blockEnd], index: certificates.count))
            i = blockEnd
        }
        guard !certificates.isEmpty else { throw .malformed(what: "certificate chain", reason: "it holds no certificate") }
        self.certificates = certificates
        var pem: [UInt8] = []
        for der in certificates { pem += Self.encode(der) }
        self.pem = pem
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        var i = start
        while i <= bytes.count - needle.count {
            if bytes[i] == needle[0], bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// One PEM block through OpenSSL's reader, back to DER.
    private static func decode(_ block: ArraySlice<UInt8>, index: Int) throws(ACMEError) -> [UInt8] {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let der: [UInt8]? = block.withUnsafeBytes { raw -> [UInt8]? in
            // The block is at most maximumBodyBytes long: the length fits an Int32.
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            guard let x509 = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
            defer { X509_free(x509) }
            let length = i2d_X509(x509, nil)
            guard length > 0 else { return nil }
            var out = [UInt8](repeating: 0, count: Int(length))
            let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var p = buffer.baseAddress
                return i2d_X509(x509, &p)
            }
            return written == length ? out : nil
        }
        guard let der else {
            throw .malformed(what: "certificate chain", reason: "certificate \(index + 1) is not a valid X.509 certificate")
        }
        return der
    }

    /// RFC 7468 §2: base64 in lines of 64 characters between the labels.
    static func encode(_ der: [UInt8]) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var text: [UInt8] = []
        var i = 0
        while i < der.count {
            let a = der[i]
            let b: UInt8? = i + 1 < der.count ? der[i + 1] : nil
            let c: UInt8? = i + 2 < der.count ? der[i + 2] : nil
            text.append(alphabet[Int(a >> 2)])
            text.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            text.append(b.map { alphabet[Int(($0 & 0x0F) << 2 | (c ?? 0) >> 6)] } ?? UInt8(ascii: "="))
            text.append(c.map { alphabet[Int($0 & 0x3F)] } ?? UInt8(ascii: "="))
            i += 3
        }
        var out = begin + [0x0A]
        var line = 0
        while line < text.count {
            out += text[line..<min(line + 64, text.count)]
            out.append(0x0A)
            line += 64
        }
        return out + end + [0x0A]
    }
}
