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
    public static func appendPath(_ path: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        if path.first != UInt8(ascii: "/") { out.append(UInt8(ascii: "/")) }
        var index = 0
        while index < path.count {
            let byte = path[index]
            if kept[Int(byte)] && (byte != UInt8(ascii: "%") || startsEscape(path, at: index)) {
                out.append(byte)
            } else {
                Hex.appendPercentEncoded(byte, to: &out)
            }
            index += 1
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
        if contains(agent, Token.windowsPhone) { return .web }
        for token in Token.ios where contains(agent, token) { return .ios }
        if contains(agent, Token.android) { return .android }
        return .web
    }

    private enum Token {
        static let windowsPhone = Array("Windows Phone".utf8)
        /// The devices, then the iOS browsers' own product tokens (MDN's User-Agent reference;
        /// https://blog.chromium.org/2020/09/changing-chrome-on-ios-user-agent-for.html).
        static let ios = ["iPhone", "iPad", "iPod", "CriOS", "FxiOS", "EdgiOS"].map { Array($0.utf8) }
        static let android = Array("Android".utf8)
        /// Before a token, a claim of compatibility rather than the platform.
        static let like = Array("like ".utf8)
    }

    /// Whether `token` occurs in `text` not preceded by a letter or digit (`(iPhone;`, ` iPad`,
    /// `Android 14`; not `TripAdvisoriPad`) and not by the word `like` and one space. Bounded by the
    /// value's length, which the parsers cap.
    private static func contains(_ text: UnsafeRawBufferPointer, _ token: [UInt8]) -> Bool {
        var i = 0
        while i + token.count <= text.count {
            if matches(text, at: i, token) && (i == 0 || !isAlphanumeric(text[i - 1])) && !followsLike(text, i) { return true }
            i += 1
        }
        return false
    }

    /// Whether `text` holds `token` at `index` (the caller keeps `index + token.count` in bounds).
    private static func matches(_ text: UnsafeRawBufferPointer, at index: Int, _ token: [UInt8]) -> Bool {
        var k = 0
        while k < token.count && text[index + k] == token[k] { k += 1 }
        return k == token.count
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
