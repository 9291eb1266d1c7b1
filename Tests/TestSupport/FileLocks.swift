import Foundation

/// Whether another open file holds `path`'s flock(2) (a shared probe that fails while an
/// exclusive one is held elsewhere).
package func flockHeld(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return flock(fd, LOCK_SH | LOCK_NB) != 0
}
