import HTTPServer
import Synchronization
import TestSupport
import Testing

@testable import Daemon

/// The `/sites` render queue (Sources/Daemon/PageRender.swift): one render at a time, shared by
/// the requests that wait for it, and a bound on those.
extension AdminEndpoint.Reply {
    fileprivate var isNow: Bool { if case .now = self { true } else { false } }
}

@Suite("PageRender")
struct PageRenderTests {
    static func page(_ text: String) -> AdminEndpoint.Answer { .init(status: .ok, body: Array(text.utf8)) }

    @Test("requests during a held render share the next; past maximumWaiting a request gets 503 at once, none rendered for it")
    func sharedAndBounded() throws {
        let render = PageRender(label: "test.page-render")
        let gate = Gate()
        render.holdRenders { gate.hold() }
        defer {
            render.holdRenders(nil)
            gate.release()
        }
        let made = Atomic<Int>(0)
        let make: @Sendable () -> AdminEndpoint.Answer = { Self.page("page \(made.add(1, ordering: .relaxed).newValue)") }
        guard case .later(let first) = render.request(make) else {
            Issue.record("the first request was not deferred")
            return
        }
        #expect(gate.waitHeld())
        var waiting: [PendingAnswer] = []
        var refused = 0
        for _ in 0..<(PageRender.maximumWaiting + 5) {
            switch render.request(make) {
            case .later(let pending): waiting.append(pending)
            case .now(let answer):
                #expect(answer.status == .serviceUnavailable && answer.fields.contains { $0.name == "Retry-After" })
                refused += 1
            }
        }
        // The held render's request counts: one place fewer for the next.
        #expect(waiting.count == PageRender.maximumWaiting - 1 && refused == 6)
        // A request whose connection closed gives its place to a new one.
        waiting.removeLast().abandon()
        guard case .later(let late) = render.request(make) else {
            Issue.record("the place of an abandoned request was not given")
            return
        }
        waiting.append(late)
        #expect(render.request(make).isNow)
        render.holdRenders(nil)
        gate.release()
        #expect(eventually { waiting.allSatisfy { $0.answer != nil } })
        #expect(first.answer.map { Array($0.body) } == Array("page 1".utf8))
        #expect(waiting.allSatisfy { $0.answer.map { Array($0.body) } == Array("page 2".utf8) }, "one render for all who waited")
        #expect(render.renders == 2 && made.load(ordering: .relaxed) == 2)
    }
}
