import HashTreeCollections
import Served
import Testing

@testable import Daemon
@testable import SiteStore

/// `AdminView.routed`: the route counters /metrics sums on each scrape hold only the sites with
/// routes, kept one change at a time as the view's entries are.
@Suite("Admin view: route counters of only the sites with routes")
struct AdminViewRoutedTests {
    static func change(_ directory: String, routes: RouteCounts?, removed: Bool = false) -> AdminView.Change {
        let status = SiteStatus(
            directory: directory, hosts: [directory], refusedHosts: [], state: .serving, etag: nil, loadedAt: nil, errors: [])
        return AdminView.Change(directory: directory, status: removed ? nil : status, routeCounts: routes)
    }

    @Test("sites without routes never enter; a site that loses its routes or goes leaves; others stay shared")
    func routedOnly() {
        let a = RouteCounts(paths: ["/p/{id}"])
        let b = RouteCounts(paths: ["/x", "/y"])
        let plain = (0..<1_000).map { Self.change("s\($0).test", routes: nil) }
        var routed = AdminView.routing(plain + [Self.change("a.test", routes: a), Self.change("b.test", routes: b)], to: [:])
        #expect(routed.count == 2)
        #expect(routed["a.test"] === a && routed["b.test"] === b)
        routed = AdminView.routing([Self.change("a.test", routes: nil), Self.change("c.test", routes: nil)], to: routed)
        #expect(Array(routed.keys) == ["b.test"])
        routed = AdminView.routing([Self.change("b.test", routes: b, removed: true)], to: routed)
        #expect(routed.isEmpty)
    }
}
