import Logging
import Synchronization
import TestSupport
import Testing

@testable import SiteStore

/// The writer both of serve's state files (served-first, validated-contents) go through.
@Suite("StateFile")
struct StateFileTests {
    struct Refused: Error {}

    @Test("writes only when the version differs from the one last written")
    func writesOnChange() {
        let log = LogLines()
        var file = StateFile(path: "/state/x", stored: 0, keeps: "x")
        var writes: [String] = []
        file.keep(0, logger: log.logger) { (path: String) throws(Refused) in writes.append(path) }
        #expect(writes.isEmpty, "the version read at start is not written again")
        file.keep(1, logger: log.logger) { (path: String) throws(Refused) in writes.append(path) }
        #expect(writes == ["/state/x"])
        #expect(file.stored == 1)
        file.keep(1, logger: log.logger) { (path: String) throws(Refused) in writes.append(path) }
        #expect(writes.count == 1, "an unchanged version is not written twice")
        #expect(log.warnings().count == 0)
    }

    @Test("a failed write warns once, is tried again at the next change, and warns again after a success")
    func warnsOnce() {
        let log = LogLines()
        var file = StateFile(path: "/state/x", stored: 0, keeps: "the thing")
        var tries = 0
        for version in 1...3 {
            file.keep(version, logger: log.logger) { (_: String) throws(Refused) in
                tries += 1
                throw Refused()
            }
        }
        #expect(tries == 3, "each change is tried")
        #expect(file.stored == 0, "nothing was written")
        #expect(file.writeFailed)
        #expect(log.warnings().count == 1, "said once, not at every reload")
        #expect(log.warnings().first?.message == "cannot keep the thing for the next start")
        // A failed version is tried again even when it does not change: it was never written.
        file.keep(3, logger: log.logger) { (_: String) throws(Refused) in tries += 1 }
        #expect(tries == 4 && file.stored == 3 && !file.writeFailed)
        file.keep(4, logger: log.logger) { (_: String) throws(Refused) in throw Refused() }
        #expect(log.warnings().count == 2, "a failure after a success is said again")
    }
}

/// The snapshot the registry edits: in place while it holds the only reference, never a
/// snapshot the server was given.
@Suite("SnapshotEditor")
struct SnapshotEditorTests {
    @Test("each change gets the next generation, and a snapshot handed out never changes")
    func handedOutStays() throws {
        var editor = SnapshotEditor(generation: 7)
        #expect(editor.snapshot.generation == 7)
        editor.setDefaultCertificate(nil)
        #expect(editor.generation == 8 && editor.snapshot.generation == 8)
        let handedOut = editor.snapshot
        editor.replace("a.test", with: nil)
        #expect(editor.generation == 9 && editor.snapshot.generation == 9)
        #expect(handedOut.generation == 8, "the server's snapshot is not edited in place")
        #expect(handedOut !== editor.snapshot)
        let before = ObjectIdentifier(editor.snapshot)
        editor.replace("b.test", with: nil)
        #expect(ObjectIdentifier(editor.snapshot) == before, "the only reference is edited in place")
        #expect(editor.snapshot.generation == 10)
    }
}
