import Glibc

/// Building a redirect's `Location` from a request's path: the bytes as the client sent them,
/// never decoded, with only what a URL may not hold (or what would change how it parses)
/// percent-encoded. Shared by a site's `fallback` and by plain HTTP's redirect to HTTPS, and
/// fuzzed with the other field code (Fuzz/FuzzFields.swift).
public enum RedirectTarget {
    /// Longest `Location` built from a request: a path where every byte is percent-encoded
    /// triples, and a client may refuse a head that large; beyond this the answer is 414.
    public static let maximumLocationLength = 16 * 1024

    /// Bytes a URL's path and query may hold as they are (RFC 3986 §3.3 and §3.4: unreserved,
    /// sub-delims, `:`, `@`, `/`, `?`), and `%`, so that an escape the client sent (`%2F`,
    /// `%0d%0a`) reaches the target as the same three bytes, never decoded into what it stands for;
    /// a `%` that starts no escape is encoded (`appendPath`). Everything else is encoded: controls,
    /// space, non-ASCII, `"`, `<`, `>`, `\` (a browser reads it as `/`), `^`, backquote, `{`, `|`,
    /// `}`, `[`, `]`, and `#` (it would start a fragment).
    private static let kept: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(c)] = true }
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(c)] = true }
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(c)] = true }
        for c in "-._~!$&'()*+,;=:@/?%".utf8 { table[Int(c)] = true }
        return table
    }()

    /// Whether `byte` may stand as it is in a redirect target (`%` only where it starts an escape).
    public static func isKept(_ byte: UInt8) -> Bool { kept[Int(byte)] }

    /// Appends a request's path and query (`/buy/42?src=mail`, as sent) to a URL being built. A
    /// path that does not start with `/` (HTTP/2's `*`, or anything a parser let through) is
    /// given one, so that it can never join the authority before it: whatever the client sent,
    /// the URL's host is the one the caller wrote before it. A `%` not followed by two hex digits
    /// is no escape (RFC 3986 §2.1) and becomes `%25`: `Location` must be a URI-reference (RFC 9110
    /// §10.2.2); strict parsers refuse a bare `%`, and lenient ones differ (browsers keep it,
    /// Foundation's `URL` rewrites it to `%25`). Encoded, it means the same to every client.
    ///
    /// Runs of kept bytes are copied whole, not byte by byte: with a fallback's only other
    /// per-request work, the User-Agent scan, this was most of what a redirect cost beyond the
    /// lookup (callgrind, docs/benchmarks.md: 612 instructions for a 16-byte path, now 327).
    public static func appendPath(_ path: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + path.count + 1)
        if path.first != UInt8(ascii: "/") { out.append(UInt8(ascii: "/")) }
        appendEncoded(path, to: &out)
    }

    /// Appends bytes from a request's path or query with `appendPath`'s encoding, and nothing
    /// before them: a part of a path (a route's capture, always after a `/` the target wrote) or a
    /// query, which the caller places after the host.
    public static func appendEncoded(_ path: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var index = 0
        var run = 0
        while index < path.count {
            let byte = path[index]
            if isKeptByte(byte) && (byte != UInt8(ascii: "%") || startsEscape(path, at: index)) {
                index += 1
                continue
            }
            if run < index { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: path[run..<index])) }
            Hex.appendPercentEncoded(byte, to: &out)
            index += 1
            run = index
        }
        if run < path.count { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: path[run..<path.count])) }
    }

    /// `kept` as a switch the compiler turns into range tests: no table load per byte.
    @inline(__always)
    private static func isKeptByte(_ c: UInt8) -> Bool {
        switch c {
        case 0x61...0x7A, 0x41...0x5A, 0x30...0x39: true
        // - . _ ~ ! $ & ' ( ) * + , ; = : @ / ? %
        case 0x2D, 0x2E, 0x5F, 0x7E, 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D, 0x3A, 0x40, 0x2F, 0x3F, 0x25: true
        default: false
        }
    }

    /// Whether the `%` at `index` is followed by two hex digits.
    private static func startsEscape(_ path: UnsafeRawBufferPointer, at index: Int) -> Bool {
        index + 2 < path.count && isHexDigit(path[index + 1]) && isHexDigit(path[index + 2])
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
    }
}

/// The platform a browser runs on, as its User-Agent says: which of a site's fallback targets
/// it gets (docs/link-domain.md), and the label its fallback answers are counted under.
public enum ClientPlatform: Int, CaseIterable, Sendable {
    /// Everything that is not a phone or tablet named below: desktops, bots, link previews, and
    /// requests without a User-Agent.
    case web
    /// iPhone, iPad (when its browser says so) and iPod touch, and Chrome, Firefox and Edge for iOS
    /// in desktop mode.
    case ios
    case android

    public var label: String {
        switch self {
        case .web: "web"
        case .ios: "ios"
        case .android: "android"
        }
    }

    /// Reads a User-Agent value (docs/user-agents.md; real strings with their sources in
    /// Tests/HTTPCoreTests/Fixtures/user-agents.tsv). Tokens are matched as browsers write them:
    /// case-sensitive, not inside a longer word (`TripAdvisoriPad` is no iPad), and not right after
    /// the word `like` (`like iPhone`, `like Android` claim compatibility, not the device: Librem 5,
    /// Tizen, e-readers, Nintendo 3DS). In this order:
    /// - `Windows Phone` → web (its UAs also say `Android` and `like iPhone`);
    /// - `iPhone`, `iPad`, `iPod` → ios (Safari, and every other iOS browser and in-app browser,
    ///   which all name the device); `CriOS`, `FxiOS`, `EdgiOS` → ios (Chrome, Firefox and Edge for
    ///   iOS, which keep their token in the Mac User-Agent they send in desktop mode). iPadOS
    ///   Safari in its default desktop mode sends a Mac's User-Agent, byte for byte, and is web: no
    ///   server can tell the two apart;
    /// - `Android` → android (Googlebot's smartphone crawler included: it renders as an Android
    ///   phone, and gets what one gets);
    /// - anything else, or no User-Agent → web.
    public static func of(userAgent: UnsafeRawBufferPointer?) -> ClientPlatform {
        guard let agent = userAgent, !agent.isEmpty else { return .web }
        // One pass: only six bytes can start a token; `Windows Phone` wins wherever it is.
        var ios = false
        var android = false
        var i = 0
        while i < agent.count {
            switch agent[i] {
            case UInt8(ascii: "W"):
                if found(agent, at: i, Token.windowsPhone) { return .web }
            case UInt8(ascii: "i"):
                if !ios && (found(agent, at: i, Token.iPhone) || found(agent, at: i, Token.iPad) || found(agent, at: i, Token.iPod)) {
                    ios = true
                }
            case UInt8(ascii: "C"):
                if !ios && found(agent, at: i, Token.criOS) { ios = true }
            case UInt8(ascii: "F"):
                if !ios && found(agent, at: i, Token.fxiOS) { ios = true }
            case UInt8(ascii: "E"):
                if !ios && found(agent, at: i, Token.edgiOS) { ios = true }
            case UInt8(ascii: "A"):
                if !android && found(agent, at: i, Token.android) { android = true }
            default:
                break
            }
            i += 1
        }
        return ios ? .ios : android ? .android : .web
    }

    private enum Token {
        static let windowsPhone = Array("Windows Phone".utf8)
        /// The devices, then the iOS browsers' own product tokens (MDN's User-Agent reference;
        /// https://blog.chromium.org/2020/09/changing-chrome-on-ios-user-agent-for.html).
        static let iPhone = Array("iPhone".utf8)
        static let iPad = Array("iPad".utf8)
        static let iPod = Array("iPod".utf8)
        static let criOS = Array("CriOS".utf8)
        static let fxiOS = Array("FxiOS".utf8)
        static let edgiOS = Array("EdgiOS".utf8)
        static let android = Array("Android".utf8)
        /// Before a token, a claim of compatibility rather than the platform.
        static let like = Array("like ".utf8)
    }

    /// Whether `token` is at `index` of `text`, not preceded by a letter or digit (`(iPhone;`,
    /// ` iPad`, `Android 14`; not `TripAdvisoriPad`) and not by the word `like` and one space.
    private static func found(_ text: UnsafeRawBufferPointer, at index: Int, _ token: [UInt8]) -> Bool {
        index + token.count <= text.count && matches(text, at: index, token) && (index == 0 || !isAlphanumeric(text[index - 1]))
            && !followsLike(text, index)
    }

    /// Whether `text` holds `token` at `index` (the caller keeps `index + token.count` in bounds).
    private static func matches(_ text: UnsafeRawBufferPointer, at index: Int, _ token: [UInt8]) -> Bool {
        token.withUnsafeBytes { token in memcmp(text.baseAddress! + index, token.baseAddress!, token.count) == 0 }
    }

    /// Whether the word `like` and one space end just before `index` (`Linux like Android`,
    /// `(New Nintendo 3DS like iPhone)`; not `Unlike iPhone`).
    private static func followsLike(_ text: UnsafeRawBufferPointer, _ index: Int) -> Bool {
        let start = index - Token.like.count
        guard start >= 0, matches(text, at: start, Token.like) else { return false }
        return start == 0 || !isAlphanumeric(text[start - 1])
    }

    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
    }
}
