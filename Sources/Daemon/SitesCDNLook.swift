package import Check
import Foundation
package import Outbound
package import Served

/// `aasad sites --cdn`: every served site's exact hosts asked of Apple's CDN once, in turn, no
/// faster than `cdn-watch.rate` (a listing of 10,000 sites must not look like an attack on
/// Apple's CDN); by site, its worst host, in the CDN watch's own terms (CDNWatchSchedule).
package struct SitesCDNLook {
    package var settings: CDNWatchSettings
    /// The CDN's base URL and roots when given on the command line, else the settings'.
    package var base: String?
    package var caFile: String?
    package var connectTo: [String]

    package init(settings: CDNWatchSettings, base: String?, caFile: String?, connectTo: [String]) {
        self.settings = settings
        self.base = base
        self.caFile = caFile
        self.connectTo = connectTo
    }

    /// The look; throws when the HTTPS client cannot start.
    package func states(of snapshot: Snapshot) throws(OutboundError) -> [String: CDNWatchSchedule.HostState] {
        let client = try OutboundClient(configuration: CDNProbe.configuration(caFile: caFile ?? settings.caFile, userAgent: "aasad-sites"))
        let probe = CDNProbe(client: client, base: base ?? settings.url, connectTo: connectTo)
        let spacing = 1 / settings.rate
        var out: [String: CDNWatchSchedule.HostState] = [:]
        var last: Date?
        for site in snapshot.sites.values.sorted(by: { $0.directory < $1.directory }) {
            guard let file = site.aasa else { continue }
            let digest = JSONComparison.digest(file.body)
            for host in site.hosts where !host.isWildcard {
                // The rate's spacing between two looks (not an ordering of events).
                if let last, Date().timeIntervalSince(last) < spacing {
                    Thread.sleep(forTimeInterval: spacing - Date().timeIntervalSince(last))
                }
                last = Date()
                let observation = probe.observe(host.name)
                let now = Int64(Date().timeIntervalSince1970)
                let state = observation.state(against: digest)
                // One look: the state holds since now, but a stale copy since the file changed.
                let copy = CDNWatchSchedule.HostState(
                    host: host.name, site: site.directory, state: state, checkedAt: now,
                    since: state == .stale ? min(file.lastModified, now) : now,
                    status: observation.status, failureReason: observation.failureReason, error: observation.error)
                if let known = out[site.directory], !CDNWatchSchedule.worse(copy, than: known) { continue }
                out[site.directory] = copy
            }
        }
        return out
    }
}
