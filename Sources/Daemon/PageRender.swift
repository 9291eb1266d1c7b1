import Dispatch
package import HTTPServer
import Synchronization

/// Renders a costly admin page (`/sites`: seconds at 100,000 sites) off the admin worker's
/// thread, which meanwhile answers `/healthz`, `/readyz`, `/metrics` and every other connection
/// (docs/architecture.md, "The admin listener"). One render at a time on a queue of its own; the
/// requests that arrive while one runs share the next, which starts when it ends and reads the
/// state as of then, so every request gets a page at least as new as itself and many requests
/// cost at most two renders. Past `maximumWaiting` requests waiting or being rendered for, a new
/// one gets 503. A waiter whose client hung up is dropped when the next request arrives; until
/// then it counts, and a render that starts before then is made for it too. The count a render is
/// for is fixed when it starts, so one that hangs up during it counts until it ends.
package final class PageRender: Sendable {
    private struct State {
        var running = false
        var waiting: [PendingAnswer] = []
        /// Requests the render now running is for.
        var rendering = 0
    }

    private let state = Mutex(State())
    private let queue: DispatchQueue
    /// Called on the render's queue before each render (tests hold a render there).
    private let beforeRender = Mutex<(@Sendable () -> Void)?>(nil)
    private let started = Atomic<Int>(0)

    /// Requests waiting for a render (the running one's included) past which a new one is
    /// refused: each holds a connection and, once answered, the page until its client reads it (`AdminOutput` bounds those bytes).
    static let maximumWaiting = 64

    static let busy = AdminEndpoint.Answer(
        status: .serviceUnavailable, body: Array("busy: too many requests wait for this page; try again\n".utf8),
        fields: [(name: "Retry-After", value: "1")], close: true)

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Renders started so far.
    package var renders: Int { started.load(ordering: .acquiring) }

    /// Holds each render where it begins: `hook` runs on the render's queue first (nil: none).
    package func holdRenders(_ hook: (@Sendable () -> Void)?) { beforeRender.withLock { $0 = hook } }

    /// The answer `render` makes, later: rendered for this request and those waiting with it.
    func request(_ render: @escaping @Sendable () -> AdminEndpoint.Answer) -> AdminEndpoint.Reply {
        let pending = PendingAnswer()
        let start = state.withLock { state -> Bool? in
            // A request whose connection closed meanwhile holds no place.
            state.waiting.removeAll { $0.abandoned }
            guard state.waiting.count + state.rendering < Self.maximumWaiting else { return nil }
            state.waiting.append(pending)
            if state.running { return false }
            state.running = true
            return true
        }
        guard let start else { return .now(Self.busy) }
        if start { queue.async { self.run(render) } }
        return .later(pending)
    }

    /// On the queue: renders for the waiting requests until none are left.
    private func run(_ render: @Sendable () -> AdminEndpoint.Answer) {
        while true {
            let batch = state.withLock { state -> [PendingAnswer] in
                defer { state.waiting = [] }
                if state.waiting.isEmpty { state.running = false }
                state.rendering = state.waiting.count
                return state.waiting
            }
            if batch.isEmpty { return }
            started.add(1, ordering: .releasing)
            beforeRender.withLock { $0 }?()
            let answer = render()
            state.withLock { $0.rendering = 0 }
            for pending in batch { pending.fulfil(answer) }
        }
    }
}
