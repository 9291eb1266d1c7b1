import AASA
import Foundation
import HTTPCore
import Hashing
import Logging
import Reactor
import SafeText
import Served
import SiteStore
import StrictJSON

/// The site state JSON of GET and PUT answers (docs/api.md, "Site state").
extension TenantAPI {
    func siteState(_ host: String, files: [String: [UInt8]], etag: String, problems: [APIProblem], served isServed: Bool) -> String {
        func file(_ name: String) -> String {
            guard let bytes = files[name] else { return "null" }
            return "{\"sha256\":\"\(Hex.string(Digest.sha256(bytes)))\",\"bytes\":\(bytes.count)}"
        }
        let servedSite = state.served(directory: host)
        let ownership = state.ownership()
        let held = ownership.held(by: host).filter { $0.name != host }.map { JSONValue.quote($0.name) }
        let refused = ownership.refusals(of: host).map { r in
            "{\"host\":\(JSONValue.quote(r.host.name)),\"heldBy\":\(r.holder.map { JSONValue.quote($0.site) } ?? "null"),\"reason\":\(JSONValue.quote(r.description))}"
        }
        let certificate =
            "{\"source\":\(JSONValue.quote(servedSite?.certificateSource ?? "default")),\"state\":\(JSONValue.quote(servedSite?.certificateState ?? (isServed ? "" : "not served"))),\"notAfter\":\(servedSite?.certificateNotAfter.map(JSONValue.quote) ?? "null"),"
            + "\"names\":[\((servedSite?.certificateNames ?? []).map(\.json).joined(separator: ","))]}"
        return "{\"host\":\(JSONValue.quote(host)),\"etag\":\(JSONValue.quote(etag)),\"served\":\(isServed),"
            + "\"files\":{\"aasa\":\(file(SiteFiles.aasa)),\"assetlinks\":\(file(SiteFiles.assetLinks)),\"settings\":\(file(SiteFiles.settings)),\"page\":\(file(SiteFiles.page))},"
            + "\"problems\":[\(problems.map(\.json).joined(separator: ","))],"
            + "\"aliases\":{\"held\":[\(held.joined(separator: ","))],\"refused\":[\(refused.joined(separator: ","))]},"
            + "\"certificate\":\(certificate),\"verification\":\(JSONValue.quote(verificationState(host)))}"
    }
}
