import TestSupport
import Testing

@testable import SiteStore

@Suite("EntryProblems: which problems are logged again unchanged")
struct EntryProblemsTests {
    @Test("logUnchanged logs the same problem at each record; without it only a changed problem is logged")
    func logging() {
        let log = LogLines()
        var problems = EntryProblems()
        let bad = ConfigProblem(severity: .error, file: "sites/x", message: "not a host name")
        let other = ConfigProblem(severity: .error, file: "sites/x", message: "a link out of sites/")
        problems.record("x", bad, logger: log.logger, logUnchanged: true)
        problems.record("x", bad, logger: log.logger, logUnchanged: true)
        #expect(log.messages().count == 2)
        problems.record("x", bad, logger: log.logger, logUnchanged: false)
        #expect(log.messages().count == 2, "an unchanged problem was logged again")
        problems.record("x", other, logger: log.logger, logUnchanged: false)
        #expect(log.messages() == Array(repeating: "sites/x: not a host name", count: 2) + ["sites/x: a link out of sites/"])
    }
}
