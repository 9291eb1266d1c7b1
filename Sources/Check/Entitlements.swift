import AASA
public import Foundation
import StrictJSON

/// The associated domains of an app's entitlements (`com.apple.developer.associated-domains`,
/// spec §2): which hosts to check, for which services, and whether the CDN is in the way.
public struct Entitlements: Sendable, Equatable {
    /// One entry, `<service>:<domain>[?mode=<modes>]`.
    public struct Domain: Sendable, Equatable {
        public var entry: String
        /// `applinks`, `webcredentials`, `appclips` or `activitycontinuation`.
        public var service: String
        /// The domain as written, without the mode (`*.example.com` for a wildcard).
        public var domain: String
        /// The host whose file the system fetches: the domain itself, or a wildcard's base
        /// domain (`applinks:*.example.com` reads `https://example.com/.well-known/…`, spec §2).
        public var host: String
        /// `developer`, `managed` or both: these devices fetch from the origin, not the CDN.
        public var modes: [String]

        /// True when the system reads the file through Apple's CDN (no alternate mode).
        public var usesCDN: Bool { modes.isEmpty }
    }

    public var domains: [Domain]
    /// The app's identifier when the file carries it (a signed app's entitlements, as
    /// `codesign -d --entitlements` prints them; Xcode's source file does not).
    public var applicationIdentifier: String?
    /// Entries that cannot work as written, each with why (a port, a scheme, an unknown service).
    public var problems: [Problem]

    public static let key = "com.apple.developer.associated-domains"
    /// Largest entitlements file read: real ones are a few kilobytes.
    public static let maximumFileSize = 1 << 20
    public static let services: Set<String> = ["applinks", "webcredentials", "appclips", "activitycontinuation"]

    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// An entitlements file's bytes as read up to one byte past `maximumFileSize` (so that a
    /// larger file is told apart and refused, never parsed truncated).
    public init(bytes: [UInt8]) throws(ReadError) {
        guard bytes.count <= Self.maximumFileSize else {
            throw ReadError(description: "larger than \(Self.maximumFileSize / 1024) KB; not an entitlements file")
        }
        try self.init(plist: Data(bytes))
    }

    /// Reads a property list (XML, as Xcode writes `.entitlements`, or binary).
    public init(plist data: Data) throws(ReadError) {
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw ReadError(description: "not a property list: \(error.localizedDescription)")
        }
        guard let dictionary = object as? [String: Any] else { throw ReadError(description: "the property list is not a dictionary") }
        guard let entries = dictionary[Self.key] as? [Any] else {
            throw ReadError(description: "no \(Self.key) array: the app has no associated domains")
        }
        domains = []
        problems = []
        applicationIdentifier = nil
        if let identifier = (dictionary["application-identifier"] as? String) ?? (dictionary["com.apple.application-identifier"] as? String)
        {
            if identifier.contains("$(") {
                problems.append(
                    Problem(
                        "entitlement", .warning, "application-identifier \(identifier.debugDescription) is an unexpanded build setting",
                        fix: "pass the signed app's entitlements (codesign -d --entitlements - App.app), or name the app with --app"))
            } else if let problem = AppIdentifier.problem(with: identifier) {
                problems.append(Problem("entitlement", "application-identifier: \(problem)", fix: "pass the signed app's entitlements"))
            } else {
                applicationIdentifier = identifier
            }
        }
        for entry in entries {
            guard let text = entry as? String else {
                problems.append(
                    Problem("entitlement", "an entry that is not a string (\(type(of: entry)))", fix: "write each entry as a string"))
                continue
            }
            switch Self.parse(text) {
            case .success(let domain): domains.append(domain)
            case .failure(let problem): problems.append(problem)
            }
        }
    }

    /// One entry, or the problem that keeps it from working.
    public static func parse(_ entry: String) -> Result<Domain, Problem> {
        func bad(_ why: String, _ fix: String) -> Result<Domain, Problem> {
            .failure(Problem("entitlement", "\(entry.debugDescription): \(why)", fix: fix))
        }
        guard let colon = entry.firstIndex(of: ":") else {
            return bad("no service", "write <service>:<domain>, e.g. applinks:example.com")
        }
        let service = String(entry[..<colon])
        if entry.contains("$(") {
            return bad(
                "an unexpanded build setting",
                "pass the signed app's entitlements (codesign -d --entitlements - App.app), where Xcode has expanded it")
        }
        guard services.contains(service) else {
            return bad("unknown service \(service.debugDescription)", "use applinks, webcredentials, appclips or activitycontinuation")
        }
        var rest = String(entry[entry.index(after: colon)...])
        var modes: [String] = []
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            rest = String(rest[..<question])
            guard query.hasPrefix("mode=") else {
                return bad("unknown query \(query.debugDescription)", "only ?mode=developer, managed or developer+managed")
            }
            modes = query.dropFirst(5).split(separator: "+").map(String.init)
            guard !modes.isEmpty, modes.allSatisfy({ $0 == "developer" || $0 == "managed" }) else {
                return bad("unknown mode", "only ?mode=developer, managed or developer+managed")
            }
        }
        if rest.contains("/") {
            return bad("a scheme or path", "write the host alone, e.g. \(service):example.com")
        }
        if rest.contains(":") {
            return bad("a port: the system never connects to another port than 443", "drop the port; serve the file on 443")
        }
        let domain = rest.lowercased()
        if domain.hasPrefix("*.") && service == "appclips" { return bad("appclips takes no wildcard", "list each App Clip domain") }
        let host = fetchedHost(domain)
        guard host.unicodeScalars.allSatisfy(\.isASCII) else {
            return bad("not in A-label form", "write internationalised names in Punycode (xn--…), e.g. applinks:xn--fhqz97e.example")
        }
        guard isHostName(host) else {
            return bad("not a fully qualified DNS name", "write the domain's full name, e.g. \(service):www.example.com")
        }
        return .success(Domain(entry: entry, service: service, domain: domain, host: host, modes: modes))
    }

    /// The host whose file the system reads for a domain, lower case: a wildcard's base domain
    /// (`*.example.com` reads `https://example.com/.well-known/…`, spec §2), else the domain.
    public static func fetchedHost(_ domain: String) -> String {
        let lower = domain.lowercased()
        return lower.hasPrefix("*.") ? String(lower.dropFirst(2)) : lower
    }

    /// A fully qualified DNS name in A-label form: letters, digits, `-` and dots, at least two
    /// labels of 1 to 63 bytes, at most 253 bytes, no label starting or ending with `-`.
    public static func isHostName(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard !bytes.isEmpty, bytes.count <= 253, bytes.allSatisfy(isHostByte) else { return false }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { !$0.isEmpty && $0.count <= 63 && $0.first != UInt8(ascii: "-") && $0.last != UInt8(ascii: "-") }
    }

    private static func isHostByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E
    }
}
