import Glibc
public import HTTPCore
import SafeText

/// Who asks for a link, beyond its platform: a link-preview crawler (shown a preview page) or an
/// app's in-app browser (shown the interstitial). Read from User-Agent tokens, case-sensitive,
/// anywhere in the value. The lists, each entry with its source and a real User-Agent, are
/// docs/link-agents.tsv; LinkAgentTests checks that these tables are that file's.
public enum LinkAgent: Sendable, Equatable {
    case crawler
    case inAppBrowser

    /// Fetchers that read a page's Open Graph and Twitter card tags to show a link.
    public static let crawlerTokens = [
        "facebookexternalhit", "Facebot", "Twitterbot", "Slackbot", "WhatsApp/", "LinkedInBot", "Discordbot", "TelegramBot",
        "Applebot", "Googlebot", "bingbot", "Pinterestbot", "redditbot", "SkypeUriPreview", "Embedly", "vkShare",
        "Snap URL Preview Service", "Mastodon/",
    ]
    /// Apps that open links in a browser of their own, where a universal link does not open the app.
    public static let inAppBrowserTokens = [
        "Instagram", "FBAN/", "FBAV/", "FB_IAB/", "musical_ly", "BytedanceWebview", "LinkedInApp", "Snapchat", "Line/",
        "KAKAOTALK",
    ]

    private static let crawlers = crawlerTokens.map { Array($0.utf8) }
    private static let inAppBrowsers = inAppBrowserTokens.map { Array($0.utf8) }

    /// Crawlers first: iMessage's previewer sends a Safari User-Agent naming facebookexternalhit.
    public static func of(userAgent: UnsafeRawBufferPointer?) -> LinkAgent? {
        guard let agent = userAgent, !agent.isEmpty else { return nil }
        if crawlers.contains(where: { contains(agent, $0) }) { return .crawler }
        if inAppBrowsers.contains(where: { contains(agent, $0) }) { return .inAppBrowser }
        return nil
    }

    private static func contains(_ text: UnsafeRawBufferPointer, _ token: [UInt8]) -> Bool {
        guard text.count >= token.count else { return false }
        let first = token[0]
        return token.withUnsafeBytes { t in
            var i = 0
            let last = text.count - token.count
            while i <= last {
                if text[i] == first && memcmp(text.baseAddress! + i, t.baseAddress!, token.count) == 0 { return true }
                i += 1
            }
            return false
        }
    }
}

/// The preview and interstitial pages: small HTML built per request, every value from the
/// request or site.yaml escaped for an HTML attribute (and text), so that no capture can add a
/// tag, an attribute or a header (docs/link-domain.md, "Previews").
public enum LinkPages {
    /// Most characters one capture contributes to a preview's text: a title shows a line; the
    /// page stays small whatever path is asked for.
    public static let maximumCaptureCharacters = 200

    /// A control character (C0, DEL, C1), a line or paragraph separator, or a bidirectional
    /// formatting character: shown as text they reorder or break what a preview displays.
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static func codePoint(_ s: Unicode.Scalar) -> String {
        let hex = String(s.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// Appends `text` escaped for a double-quoted attribute and for element content.
    static func appendEscaped(_ text: some Sequence<UInt8>, to out: inout [UInt8]) {
        HTMLText.appendEntities(text, to: &out)
    }

    /// A capture as text: percent-decoded, read as UTF-8 (a bad sequence becomes U+FFFD), every
    /// unsafe character U+FFFD, cut at `maximumCaptureCharacters`, then escaped.
    static func appendCapture(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = HexDigit.value(bytes[i + 1]),
                let lo = HexDigit.value(bytes[i + 2])
            {
                decoded.append(hi << 4 | lo)
                i += 3
            } else {
                decoded.append(bytes[i])
                i += 1
            }
        }
        var text = String.UnicodeScalarView()
        for scalar in String(decoding: decoded, as: UTF8.self).unicodeScalars {
            if text.count == maximumCaptureCharacters {
                text.append("…")
                break
            }
            text.append(isUnsafe(scalar) ? "\u{FFFD}" : scalar)
        }
        appendEscaped(String(text).utf8, to: &out)
    }

    static func appendText(_ text: PreviewText, captures: [UnsafeRawBufferPointer], to out: inout [UInt8]) {
        for part in text.parts {
            switch part {
            case .text(let t): appendEscaped(t.utf8, to: &out)
            case .capture(let i): if i < captures.count { appendCapture(captures[i], to: &out) }
            }
        }
    }

    /// The request's URL: `https://HOST` and the path and query as sent, encoded as a redirect's
    /// `{path}` is. `host` is a served name (letters, digits, '-', '.').
    static func canonical(host: String, pathAndQuery: UnsafeRawBufferPointer) -> [UInt8] {
        var url = Array("https://".utf8) + Array(host.utf8)
        RedirectTarget.appendPath(pathAndQuery, to: &url)
        return url
    }

    /// The preview page: Open Graph and Twitter card tags, the canonical link, the same as text.
    static func preview(_ preview: PreviewSettings, url: [UInt8], image: [UInt8]?, captures: [UnsafeRawBufferPointer]) -> [UInt8] {
        var title: [UInt8] = []
        if let t = preview.title { appendText(t, captures: captures, to: &title) }
        var description: [UInt8] = []
        if let d = preview.description { appendText(d, captures: captures, to: &description) }
        var siteName: [UInt8] = []
        if let s = preview.siteName { appendText(s, captures: captures, to: &siteName) }
        var escapedURL: [UInt8] = []
        appendEscaped(url, to: &escapedURL)
        var escapedImage: [UInt8]? = nil
        if let image {
            var e: [UInt8] = []
            appendEscaped(image, to: &e)
            escapedImage = e
        }
        var out: [UInt8] = []
        out.reserveCapacity(1024 + 3 * (title.count + description.count) + 2 * escapedURL.count)
        func add(_ s: String) { out += Array(s.utf8) }
        func meta(_ attribute: String, _ name: String, _ value: [UInt8]) {
            add("<meta \(attribute)=\"\(name)\" content=\"")
            out += value
            add("\">\n")
        }
        add("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n<title>")
        out += title
        add("</title>\n")
        if !title.isEmpty { meta("property", "og:title", title) }
        if !description.isEmpty {
            meta("name", "description", description)
            meta("property", "og:description", description)
        }
        if let escapedImage { meta("property", "og:image", escapedImage) }
        if !siteName.isEmpty { meta("property", "og:site_name", siteName) }
        meta("property", "og:url", escapedURL)
        meta("property", "og:type", Array("website".utf8))
        meta("name", "twitter:card", Array((escapedImage == nil ? "summary" : "summary_large_image").utf8))
        if !title.isEmpty { meta("name", "twitter:title", title) }
        if !description.isEmpty { meta("name", "twitter:description", description) }
        if let escapedImage { meta("name", "twitter:image", escapedImage) }
        add("<link rel=\"canonical\" href=\"")
        out += escapedURL
        add("\">\n</head><body><h1>")
        out += title
        add("</h1><p>")
        out += description
        add("</p><p><a href=\"")
        out += escapedURL
        add("\">")
        out += escapedURL
        add("</a></p></body></html>\n")
        return out
    }

    /// The in-app browser's page: a link to the same URL (which the system may open in the app
    /// from a tap, where it did not from the app's own browser) and, when there is one, the
    /// platform's target (the store).
    static func interstitial(url: [UInt8], store: [UInt8]?) -> [UInt8] {
        var escapedURL: [UInt8] = []
        appendEscaped(url, to: &escapedURL)
        var out: [UInt8] = []
        func add(_ s: String) { out += Array(s.utf8) }
        add("<!doctype html>\n<html><head><meta charset=\"utf-8\">\n")
        add("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Open in the app</title>\n")
        add("<link rel=\"canonical\" href=\"")
        out += escapedURL
        add("\">\n</head><body>\n<p><a id=\"open\" href=\"")
        out += escapedURL
        add("\">Open in the app</a></p>\n")
        if let store {
            add("<p><a id=\"store\" href=\"")
            appendEscaped(store, to: &out)
            add("\">Get the app</a></p>\n")
        }
        add("</body></html>\n")
        return out
    }

    /// The fields of both pages: never cached for another client (the page depends on the
    /// User-Agent), no script or style may run (`default-src 'none'`), no sniffing.
    static func headers(length: Int, cacheControl: String) -> PreparedFields {
        PreparedFields([
            (name: "Content-Type", value: "text/html; charset=utf-8"), (name: "Content-Length", value: "\(length)"),
            (name: "Cache-Control", value: cacheControl), (name: "Vary", value: "User-Agent"),
            (name: "Content-Security-Policy", value: "default-src 'none'; img-src https:"),
            (name: "X-Content-Type-Options", value: "nosniff"),
        ])
    }
}

/// What a link domain answers one request (a route's, else the fallback's): the one decision
/// `serve` and `aasad match` share.
public struct LinkAnswer {
    public enum Kind {
        /// The redirect, with its `Location` when built for this request (nil: in its fields).
        case redirect(PreparedFallback.Redirect, location: [UInt8]?)
        case page(PreparedFile)
        /// A preview for a crawler, or the interstitial for an in-app browser: 200, built here.
        case preview(headers: PreparedFields, body: [UInt8])
        case interstitial(headers: PreparedFields, body: [UInt8])
        /// The `Location` would be longer than `RedirectTarget.maximumLocationLength`: 414.
        case tooLong
    }

    public let kind: Kind
    /// The route that answered (index in `routes:`); nil for the fallback.
    public let route: Int?
    public let platform: ClientPlatform
}

extension ServedSite {
    /// What the site's routes and fallback answer a request target as sent (`target`: the path
    /// and query, an absolute-form target's scheme and authority left out): the path is the
    /// bytes before the first `?`, as both request parsers split it (RFC 9112 §3.2.1; the
    /// HTTP/2 `:path` the same way, RFC 9113 §8.3.1). `serve`'s responder and `aasad match
    /// --config` both ask through here, so they read a path in one form: as sent, not decoded
    /// (`%2F`, `%2e%2e` and `..` stay as written).
    public func linkAnswer(host: String, target: UnsafeRawBufferPointer, userAgent: UnsafeRawBufferPointer?) -> LinkAnswer? {
        let end = target.firstIndex(of: UInt8(ascii: "?")) ?? target.count
        return linkAnswer(host: host, path: UnsafeRawBufferPointer(rebasing: target[..<end]), pathAndQuery: target, userAgent: userAgent)
    }

    /// What the site's routes and fallback answer `path` (without its query) for this
    /// User-Agent; nil: 404, as without them. `host` is the served name asked for (the preview's
    /// canonical URL); `pathAndQuery` what targets carry over.
    public func linkAnswer(
        host: String, path: UnsafeRawBufferPointer, pathAndQuery: UnsafeRawBufferPointer, userAgent: UnsafeRawBufferPointer?
    ) -> LinkAnswer? {
        guard routes != nil || fallback != nil, PreparedFallback.covers(path: path) else { return nil }
        let platform = ClientPlatform.of(userAgent: userAgent)
        var route: Int? = nil
        var captures: [Range<Int>] = []
        let answer: PreparedFallback.Answer
        if let routes, let found = routes.first(path: path, platform: platform, counts: routeCounts),
            let a = routes.answers[found.route][platform.rawValue]
        {
            route = found.route
            captures = found.captures
            answer = a
        } else if let a = fallback?.answer(for: platform) {
            answer = a
        } else {
            return nil
        }
        let settings = route.map { routes!.settings[$0] }
        // The redirect's Location, built now: the interstitial links to it too.
        var location: [UInt8]? = nil
        var redirect: PreparedFallback.Redirect? = nil
        if case .redirect(let r) = answer {
            redirect = r
            if let template = r.template {
                let built: [UInt8]
                if settings != nil {
                    built = template.render { slot, out in
                        switch slot {
                        case 0: RedirectTarget.appendPath(pathAndQuery, to: &out)
                        case 1: RedirectTarget.appendEncoded(Self.query(pathAndQuery), to: &out)
                        default:
                            if slot - 2 < captures.count {
                                RedirectTarget.appendEncoded(UnsafeRawBufferPointer(rebasing: path[captures[slot - 2]]), to: &out)
                            }
                        }
                    }
                } else {
                    built = template.render(pathAndQuery: pathAndQuery)
                }
                guard built.count <= RedirectTarget.maximumLocationLength else {
                    return LinkAnswer(kind: .tooLong, route: route, platform: platform)
                }
                location = built
            }
        }
        let preview = settings?.preview ?? links.preview
        let interstitial = settings?.interstitial ?? links.interstitial
        if preview != nil || interstitial, let agent = LinkAgent.of(userAgent: userAgent) {
            let cacheControl = links.cacheControl ?? FallbackSettings.defaultCacheControl
            let url = LinkPages.canonical(host: host, pathAndQuery: pathAndQuery)
            if agent == .crawler, let preview {
                let values = captures.map { UnsafeRawBufferPointer(rebasing: path[$0]) }
                var image: [UInt8]? = nil
                if let template = preview.image {
                    image = template.render { slot, out in
                        if slot < values.count { RedirectTarget.appendEncoded(values[slot], to: &out) }
                    }
                }
                let body = LinkPages.preview(preview, url: url, image: image, captures: values)
                return LinkAnswer(
                    kind: .preview(headers: LinkPages.headers(length: body.count, cacheControl: cacheControl), body: body), route: route,
                    platform: platform)
            }
            if agent == .inAppBrowser, interstitial {
                let store = redirect.flatMap { location ?? $0.fixedLocation }
                let body = LinkPages.interstitial(url: url, store: store)
                return LinkAnswer(
                    kind: .interstitial(headers: LinkPages.headers(length: body.count, cacheControl: cacheControl), body: body),
                    route: route, platform: platform)
            }
        }
        switch answer {
        case .page:
            // A route's own page (looked up per route at load); the fallback's is the site's. A
            // route whose page is gone answers 404, never another page.
            let file: PreparedFile? = if let route { routePages[route] } else { page }
            guard let file else { return nil }
            return LinkAnswer(kind: .page(file), route: route, platform: platform)
        case .redirect(let r):
            return LinkAnswer(kind: .redirect(r, location: location), route: route, platform: platform)
        }
    }

    /// The query of a path and query as sent (after the first `?`), empty when there is none.
    static func query(_ pathAndQuery: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let mark = pathAndQuery.firstIndex(of: UInt8(ascii: "?")) else {
            return UnsafeRawBufferPointer(rebasing: pathAndQuery[0..<0])
        }
        return UnsafeRawBufferPointer(rebasing: pathAndQuery[(mark + 1)...])
    }
}
