import Foundation
import SiteStore
import Synchronization

/// The names sites written by this API claim that no reload has decided yet. The ownership a
/// write is checked against is the last reload's; two writes of different sites naming one alias
/// within a reload's time would both pass it. Each write's names are kept here until the served
/// state's ownership shows them (or the site gone), and laid over that ownership for the next
/// check; the check and the rename into place run in one section, so that of two such writes the
/// second sees the first.
final class PendingClaims: Sendable {
    /// Held from a write's ownership check until its site is in place.
    let section = NSLock()
    /// Sites by directory name: what they name now, or nil for a site removed.
    private let pending = Mutex<[String: Change]>([:])

    private struct Change {
        var names: HostOwnership.Names?
    }

    /// `ownership` with every write not yet decided by a reload set on it; writes the reload has
    /// decided are forgotten.
    func overlay(on ownership: HostOwnership) -> HostOwnership {
        pending.withLock { pending in
            var copy = ownership
            for (site, change) in pending {
                if ownership.names(of: site) == change.names {
                    pending[site] = nil
                    continue
                }
                if let names = change.names { copy.set(site, names) } else { copy.remove(site) }
            }
            _ = copy.resolve()
            return copy
        }
    }

    /// A reload decided `site`'s write (it is served as written, or gone): the ownership holds
    /// its names now. Forgotten here rather than when the ownership next equals the recorded
    /// names, which it never does again once a person or git-sync changed or removed the site:
    /// the stale claim would refuse every later write naming the alias until a restart.
    func forget(_ site: String) {
        pending.withLock { $0[site] = nil }
    }

    /// A site was written with `names` (nil: removed).
    func record(_ site: String, _ names: HostOwnership.Names?) {
        pending.withLock { $0[site] = Change(names: names) }
    }

    /// The names as `HostOwnership.set` keeps them (each once, none of the site's own entries),
    /// so that the reload's are recognised as these.
    static func normalised(_ names: HostOwnership.Names) -> HostOwnership.Names {
        var names = names
        var seen = Set([names.host] + names.symlinks.values)
        names.aliases = names.aliases.filter { seen.insert($0).inserted }
        return names
    }
}
