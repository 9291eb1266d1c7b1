import Foundation
import TestSupport
import Testing

@testable import ACME

/// `ACMEClient.issue` against a CA that misbehaves (`FakeCA`): polling stays within its bounds
/// whatever the CA asks, every way the CA can refuse or go wrong ends in a typed error that keeps
/// its problem document, and the solver's answers are cleaned up on every way out. The sleep is
/// recorded, never slept.
@Suite("ACME issuance against a misbehaving CA")
struct IssueTests {
    /// Runs `issue` for `names` against `scenario`; the error, the sleeps asked for, the solver.
    static func issue(
        _ scenario: FakeCA.Scenario, names: [String] = ["a.test"], solver: RecordingSolver = RecordingSolver()
    ) throws -> (error: ACMEError?, sleeps: [Duration], solver: RecordingSolver) {
        let ca = try FakeCA(scenario, names: names)
        let client = try ca.client()
        var sleeps: [Duration] = []
        do {
            _ = try client.issue(names: names, solver: solver, sleep: { sleeps.append($0) })
            return (nil, sleeps, solver)
        } catch {
            return (error, sleeps, solver)
        }
    }

    @Test("an authorization that stays pending (Retry-After: 1) is read maximumAttempts times, then the issuance times out")
    func pendingReadBound() throws {
        let (error, sleeps, solver) = try Self.issue(.init(name: "authz-pending", retryAfter: "1"))
        guard case .timedOut(let what, let retryAfter) = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(what.contains("authorization for a.test") && what.contains("\(ACMEPolling.maximumAttempts) reads"))
        #expect(retryAfter == nil)
        #expect(sleeps == Array(repeating: .seconds(1), count: ACMEPolling.maximumAttempts - 1))
        #expect(solver.recorded == ["present http-01 a.test tok0http01", "cleanUp http-01 a.test tok0http01"])
    }

    @Test("without Retry-After the waits double from 50 ms to 10 s, within the read bound")
    func defaultIntervals() throws {
        let (error, sleeps, _) = try Self.issue(.init(name: "authz-pending"))
        guard case .timedOut = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        let expected: [Duration] =
            [50, 100, 200, 400, 800, 1_600, 3_200, 6_400].map { Duration.milliseconds($0) }
            + Array(repeating: ACMEPolling.maximumInterval, count: ACMEPolling.maximumAttempts - 9)
        #expect(sleeps == expected)
        #expect(sleeps.reduce(.zero, +) <= ACMEPolling.maximumTotalWait)
    }

    @Test("Retry-After is honoured up to the total wait bound: 3 × 100 s is exactly the bound; the fourth is refused")
    func totalWaitBound() throws {
        let (error, sleeps, _) = try Self.issue(.init(name: "authz-pending", retryAfter: "100"))
        #expect(sleeps == [.seconds(100), .seconds(100), .seconds(100)])
        #expect(sleeps.reduce(.zero, +) == ACMEPolling.maximumTotalWait)
        guard case .timedOut(_, let retryAfter) = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(retryAfter == 100)
    }

    @Test("a Retry-After of a day is not slept: the issuance stops at once and hands the wait to the back-off")
    func hugeRetryAfter() throws {
        let (error, sleeps, solver) = try Self.issue(.init(name: "authz-pending", retryAfter: "86400"))
        #expect(sleeps.isEmpty)
        #expect(error == .timedOut(what: "the authorization for a.test (still pending) after 1 read", retryAfter: 86_400))
        #expect(solver.recorded.last == "cleanUp http-01 a.test tok0http01")
    }

    @Test("an order that stays processing with Retry-After: 0 is stopped by the read count, not spun on")
    func processingForever() throws {
        let (error, sleeps, _) = try Self.issue(.init(name: "order-processing-forever", retryAfter: "0"))
        guard case .timedOut(let what, _) = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(what.contains("still processing after finalize"))
        // Reads: the finalize answer, then the order; one sleep between each two.
        #expect(sleeps.count == ACMEPolling.maximumAttempts - 1 && sleeps.allSatisfy { $0 == .zero })
    }

    @Test("an invalid authorization ends the issuance with the challenge's problem, cleaned and bounded; the answer is cleaned up")
    func invalidAuthorization() throws {
        let (error, _, solver) = try Self.issue(.init(name: "authz-invalid"))
        guard case .invalid(let what, let problem) = error, let problem else {
            Issue.record("expected an invalid authorization, got \(String(describing: error))")
            return
        }
        #expect(what == "the authorization for a.test (http-01)")
        #expect(error?.description.hasPrefix("the CA found the authorization for a.test (http-01) invalid: unauthorized: Invalid") == true)
        #expect(problem.acmeType == "unauthorized")
        #expect(problem.detail.hasPrefix("Invalid response from http://a.test/\u{FFFD}: 404"))
        #expect(problem.detail.unicodeScalars.count == ACMELimits.maximumProblemText)
        #expect(solver.recorded == ["present http-01 a.test tok0http01", "cleanUp http-01 a.test tok0http01"])
    }

    @Test("a solver that fails to present: the error is its own, and every answer made so far is cleaned up")
    func presentFails() throws {
        let solver = RecordingSolver(failOn: "b.test")
        let (error, _, _) = try Self.issue(.init(name: "ok"), names: ["a.test", "b.test"], solver: solver)
        #expect(error == .storage("cannot write the answer for b.test"))
        #expect(
            solver.recorded == [
                "present http-01 a.test tok0http01", "present http-01 b.test tok1http01",
                "cleanUp http-01 a.test tok0http01", "cleanUp http-01 b.test tok1http01",
            ])
    }

    @Test("an order that turns invalid after finalize carries the CA's problem")
    func invalidOrder() throws {
        let (error, _, _) = try Self.issue(.init(name: "order-invalid"))
        #expect(
            error
                == .invalid(
                    what: "the order for a.test", problem: ACMEProblem(type: ACMEProblem.namespace + "badCSR", detail: "key too weak")))
    }

    @Test("an order that goes from processing back to pending is refused")
    func orderBackwards() throws {
        let (error, _, _) = try Self.issue(.init(name: "order-backwards"))
        #expect(error == .malformed(what: "order", reason: "it went back to pending after it was finalized"))
    }

    @Test("an order already valid when created (another key's certificate) is refused before anything is presented")
    func orderAlreadyValid() throws {
        let (error, _, solver) = try Self.issue(.init(name: "order-already-valid"))
        #expect(error == .malformed(what: "order", reason: "the new order is already valid"))
        #expect(solver.recorded.isEmpty)
    }

    @Test("an order for other names than requested is refused")
    func orderForOtherNames() throws {
        let (error, _, solver) = try Self.issue(.init(name: "other-names"))
        #expect(error == .malformed(what: "order", reason: "it is for other.test, not for a.test"))
        #expect(solver.recorded.isEmpty)
    }

    @Test("an order listing more authorizations than names is refused before any is fetched or presented")
    func tooManyAuthorizations() throws {
        let (error, _, solver) = try Self.issue(.init(name: "too-many-authz"))
        guard case .malformed(let what, let reason) = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
        #expect(what == "order" && reason.contains("3 authorizations"))
        #expect(solver.recorded.isEmpty)
    }

    @Test("an authorization for a name nobody requested is refused: nothing is presented for it")
    func foreignAuthorization() throws {
        let (error, _, solver) = try Self.issue(.init(name: "foreign-authz"))
        #expect(error == .malformed(what: "authorization", reason: "it is for evil.test, which was not requested"))
        #expect(solver.recorded.isEmpty)
    }

    @Test("a wildcard name offered http-01 only cannot be answered: dns-01 is the only way for wildcards")
    func wildcardWithoutDNS() throws {
        let (error, _, solver) = try Self.issue(.init(name: "wildcard-no-dns"), names: ["*.a.test"])
        #expect(error == .noChallenge(name: "*.a.test", offered: ["http-01"], answerable: ["dns-01"]))
        #expect(solver.recorded.isEmpty)
        #expect(error?.description.contains("dns-01 only") == true)
    }

    @Test("a wildcard and its base name: dns-01 for the wildcard (base name given), the solver's first choice for the other")
    func wildcardChoice() throws {
        let (_, _, solver) = try Self.issue(.init(name: "ok"), names: ["a.test", "*.a.test"])
        #expect(solver.recorded.prefix(2) == ["present http-01 a.test tok0http01", "present dns-01 a.test tok1dns01"])
    }

    @Test("a certificate that is not one (bad base64 between the PEM lines) is refused")
    func garbageCertificate() throws {
        let (error, _, _) = try Self.issue(.init(name: "cert-garbage"))
        guard case .malformed(let what, _) = error else {
            Issue.record("expected malformed, got \(String(describing: error))")
            return
        }
        #expect(what == "certificate chain")
    }

    @Test("a certificate for another key and other names is refused after download (fetched with the chain's Accept)")
    func foreignCertificate() throws {
        let (error, _, solver) = try Self.issue(.init(name: "cert-wrong-key"))
        #expect(error == .malformed(what: "certificate", reason: "the leaf's public key is not the key of the CSR"))
        #expect(solver.recorded == ["present http-01 a.test tok0http01", "cleanUp http-01 a.test tok0http01"])
    }

    @Test("names are checked before anything is sent: none, too many, or not host names")
    func badNames() throws {
        let ca = try FakeCA(.init(name: "ok"), names: ["a.test"])
        let client = try ca.client()
        let solver = RecordingSolver()
        for names in [[], ["a b.test"], ["a.test", "*.*.test"], (0...ACMELimits.maximumOrderNames).map { "n\($0).test" }] {
            #expect(throws: ACMEError.self, "\(names.prefix(2))") {
                try client.issue(names: names, solver: solver, sleep: { _ in Issue.record("slept") })
            }
        }
        #expect(solver.recorded.isEmpty)
    }
}
