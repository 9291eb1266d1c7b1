package import AASA
package import Check

/// The `cdn-watch:` section of aasad.yaml (`Sources/Check/CDNWatch.swift`): Apple's CDN copy of every served host,
/// compared with what aasad serves, and (`google`) what Google's Digital Asset Links API lists for
/// every host serving an assetlinks.json. Each off unless turned on: both make outbound requests.
package struct CDNWatchSettings: Equatable {
    package var enabled = false
    /// Google's view of each served assetlinks.json, watched beside Apple's CDN.
    package var google = false
    /// `statements:list`'s URL.
    package var googleURL = DALProbe.google
    /// The API key (`DALProbe.keyProblem`); nil: none. Never logged or shown.
    package var googleKey: String?
    /// The CDN base; the host is appended.
    package var url = HostChecker.appleCDN
    /// Seconds between two checks of one host (6 hours): Apple's CDN refetches within about a
    /// day, so four looks a day tell when it did without asking it more than it asks us.
    package var interval: Int64 = 6 * 3_600
    /// Most CDN requests a second, every host together: at 10,000 hosts and 6 hours, 0.46 a
    /// second is needed; more hosts than `rate * interval` stretch the interval instead.
    package var rate = 2.0
    /// Requests a second: at least one every 100 s (a watch that still moves), at most 20 (far
    /// below what a CDN notices, with 100,000 hosts checked in under two hours).
    package static let rateBounds = 0.01...20.0
    /// Extra roots for the CDN's HTTPS (a test or proxy CDN); the system's are trusted too.
    package var caFile: String?

    /// `6h`, `30m`, `90s`, `1d` or plain seconds, from 1 second to 7 days.
    package static func duration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy(\.isASCII), let n = Int64(digits), n >= 1 else { return nil }
        let seconds = n * unit
        return seconds <= 7 * 86_400 ? seconds : nil
    }

    package static func urlProblem(_ text: String) -> String? {
        guard text.hasPrefix("https://"), text.hasSuffix("/"), text.utf8.count <= 2_048,
            text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            return "must be an https URL ending in '/', e.g. \(HostChecker.appleCDN), not \"\(TerminalText.escaped(text))\""
        }
        return nil
    }

    /// Whether the watch runs at all.
    package var isOn: Bool { enabled || google }

    package var watchSettings: CDNWatch.Settings {
        CDNWatch.Settings(
            url: url, interval: interval, rate: rate, caFile: caFile, apple: enabled,
            google: google ? CDNWatch.Google(url: googleURL, key: googleKey) : nil)
    }
}

/// The settings as `"\(settings)"`, `String(reflecting:)` and `dump` show them: every field but
/// the key, which shows as set or none (a debug print of the settings must not leak it).
extension CDNWatchSettings: CustomReflectable {
    package var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "enabled": enabled, "google": google, "googleURL": googleURL, "googleKey": googleKey == nil ? "none" : "<hidden>",
                "url": url, "interval": interval, "rate": rate, "caFile": caFile as Any,
            ], displayStyle: .struct)
    }
}
