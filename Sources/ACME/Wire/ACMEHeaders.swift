import HTTPCore
public import Outbound
import SafeText

/// The response header fields ACME reads (RFC 8555 §6.5 Replay-Nonce, §7.4 Location, §7.1.1 Link,
/// §6.6 Retry-After), parsed as bytes and bounded. Unknown fields are ignored.
public typealias ACMEHeaders = ResponseHeaders

extension ResponseHeaders {
    /// RFC 8555 §6.5.1: a non-empty base64url nonce, bounded; nil when absent or invalid (a bad
    /// nonce is never sent back).
    public var replayNonce: String? {
        guard let value = first("replay-nonce") else { return nil }
        return ACMEHeaders.nonce(value)
    }

    static func nonce(_ value: [UInt8]) -> String? {
        guard !value.isEmpty, value.count <= ACMELimits.maximumNonceLength, Base64URL.isAlphabet(value) else { return nil }
        return String(decoding: value, as: UTF8.self)
    }

    /// §7.3, §7.4: the new account's or order's URL.
    public func location() throws(ACMEError) -> ACMEURL? {
        guard let value = first("location") else { return nil }
        return try ACMEURL(String(decoding: value, as: UTF8.self), what: "Location field")
    }

    /// RFC 9110 §10.2.3: seconds to wait from `now` (seconds since the epoch), delay-seconds or
    /// an HTTP-date, capped at `ACMELimits.maximumRetryAfterSeconds`; nil when absent or invalid.
    public func retryAfter(now: Int64) -> Int64? {
        guard let value = first("retry-after") else { return nil }
        return Self.retryAfter(value, now: now)
    }

    static func retryAfter(_ value: [UInt8], now: Int64) -> Int64? {
        guard let first = value.first else { return nil }
        if first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") {
            // delay-seconds = 1*DIGIT. Digits past the cap's length are saturated, not multiplied
            // (no overflow on a hostile 40-digit value).
            var seconds: Int64 = 0
            for c in value {
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                seconds = min(seconds * 10 + Int64(c - UInt8(ascii: "0")), ACMELimits.maximumRetryAfterSeconds)
            }
            return seconds
        }
        guard let date = HTTPDate.parse(value, now: now) else { return nil }
        return min(max(date - now, 0), ACMELimits.maximumRetryAfterSeconds)
    }

    /// RFC 8288 Link values with their relation types (`up`, `index`, `alternate`), from every
    /// Link field: absolute https targets only, at most `ACMELimits.maximumLinks`.
    public var links: [(url: ACMEURL, rel: String)] {
        var out: [(url: ACMEURL, rel: String)] = []
        for field in fields where field.name == "link" {
            for link in Self.parseLinks(field.value) {
                guard out.count < ACMELimits.maximumLinks else { return out }
                out.append(link)
            }
        }
        return out
    }

    /// The targets of the links with relation `rel`.
    public func links(rel: String) -> [ACMEURL] { links.filter { $0.rel == rel }.map(\.url) }

    /// One Link field value: `<uri>; rel="up", <uri>; rel=alternate; title="x"`. A value that does
    /// not follow the grammar ends the parse; what was read before stays.
    static func parseLinks(_ value: [UInt8]) -> [(url: ACMEURL, rel: String)] {
        var out: [(url: ACMEURL, rel: String)] = []
        var i = 0
        func skipSpace() { while i < value.count, value[i] == 0x20 || value[i] == 0x09 { i += 1 } }
        while i < value.count, out.count < ACMELimits.maximumLinks {
            skipSpace()
            guard i < value.count, value[i] == UInt8(ascii: "<") else { return out }
            guard let close = value[i...].firstIndex(of: UInt8(ascii: ">")) else { return out }
            let target = String(decoding: value[(i + 1)..<close], as: UTF8.self)
            i = close + 1
            var rels: [String] = []
            // link-param = token BWS [ "=" BWS ( token / quoted-string ) ], after ";".
            while true {
                skipSpace()
                guard i < value.count, value[i] == UInt8(ascii: ";") else { break }
                i += 1
                skipSpace()
                let nameStart = i
                while i < value.count, isParamNameByte(value[i]) { i += 1 }
                let name = String(decoding: value[nameStart..<i], as: UTF8.self).lowercased()
                skipSpace()
                var paramValue = ""
                if i < value.count, value[i] == UInt8(ascii: "=") {
                    i += 1
                    skipSpace()
                    if i < value.count, value[i] == UInt8(ascii: "\"") {
                        i += 1
                        var bytes: [UInt8] = []
                        while i < value.count, value[i] != UInt8(ascii: "\"") {
                            if value[i] == UInt8(ascii: "\\"), i + 1 < value.count { i += 1 }
                            bytes.append(value[i])
                            i += 1
                        }
                        guard i < value.count else { return out }
                        i += 1
                        paramValue = String(decoding: bytes, as: UTF8.self)
                    } else {
                        let start = i
                        while i < value.count, isParamNameByte(value[i]) { i += 1 }
                        paramValue = String(decoding: value[start..<i], as: UTF8.self)
                    }
                }
                // RFC 8288 §3.3: rel may list several types separated by spaces.
                if name == "rel" { rels += paramValue.split(separator: " ").map { $0.lowercased() } }
            }
            if let url = try? ACMEURL(target, what: "Link field") {
                for rel in rels where out.count < ACMELimits.maximumLinks { out.append((url, rel)) }
            }
            skipSpace()
            guard i < value.count else { return out }
            guard value[i] == UInt8(ascii: ",") else { return out }
            i += 1
        }
        return out
    }

    static func isParamNameByte(_ c: UInt8) -> Bool { isTokenByte(c) }
}
