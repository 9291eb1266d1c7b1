import HTTPCore
import Testing

@testable import HTTPServer

/// Answers `/later` with a `PendingAnswer` (as the admin endpoint answers `/sites` when its page
/// must be rendered), anything else at once with its path as the body.
private struct DeferringAnswerer: RequestAnswering {
    var dateLine: DateLine = {
        var line = DateLine()
        line.update(now: 784_111_777)
        return line
    }()
    let pending: PendingAnswer

    mutating func answer(_ request: RequestView, peer: Peer, tls: Responder.TLSIdentity) -> Response {
        let path = String(decoding: request.path, as: UTF8.self)
        if path == "/later" {
            var response = Response.error(.serviceUnavailable, close: false)
            response.deferred = AdminEndpoint.Deferred(pending: pending, method: request.method)
            return response
        }
        return AdminEndpoint.Answer(status: .ok, body: Array(path.utf8)).framed(for: request.method).answering(request.method)
    }

    mutating func refuse(_ status: Status, peer: Peer) -> Response { .error(status, close: true) }
}

extension AdminEndpoint.Answer {
    fileprivate func framed(for method: Method) -> Response { AdminEndpoint { _ in nil }.frame(self, for: method) }
}

@Suite("Connection state machine: answers made on another thread")
struct ConnectionMachineDeferredTests {
    private typealias Context = ConnectionContext<DeferringAnswerer>

    private static func setUp(admin: Bool = true) -> (ConnectionMachine, Context, PendingAnswer) {
        let pending = PendingAnswer()
        let context = Context(now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: DeferringAnswerer(pending: pending))
        let machine = ConnectionMachine(
            peer: Peer(fd: -1, client: "-", isAdmin: admin, counted: nil), tls: false, now: context.now, limits: context.limits)
        return (machine, context, pending)
    }

    /// Writes what the machine asks to, all of it, until it waits for something other than its
    /// next turn (an admin connection answers one request a turn, then waits for writability with
    /// nothing pending: the loop's next turn, `flushed(0)`); returns the bytes.
    private static func drain(_ machine: inout ConnectionMachine, _ first: ConnectionMachine.Next, _ context: inout Context) -> (
        String, ConnectionMachine.Next
    ) {
        var next = first
        var written: [UInt8] = []
        while true {
            while next == .write {
                written += context.out
                next = machine.sent(context.out.count, &context)
            }
            guard next == .wait, machine.phase == .writing, !machine.hasPendingOutput else { break }
            next = machine.flushed(0, &context)
        }
        return (String(decoding: written, as: UTF8.self), next)
    }

    @Test("pipelined admin asks: one answered a turn, so a client that sends thousands cannot hold the loop's other connections")
    func oneAnswerPerTurn() {
        var (machine, context, _) = Self.setUp()
        let bytes = Array(String(repeating: "HEAD /sites HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 100).utf8)
        var next = bytes.withUnsafeBytes { machine.received($0, &context) }
        var answers = 0
        for turn in 1...100 {
            #expect(next == .write)
            answers += String(decoding: context.out, as: UTF8.self).components(separatedBy: "HTTP/1.1 200 ").count - 1
            #expect(answers == turn, "one answer a turn, not \(answers) by turn \(turn)")
            if answers != turn { return }
            next = machine.sent(context.out.count, &context)
            if turn == 100 { break }
            // Waits for writability, not input: the asks already read are answered at the next turn.
            #expect(next == .wait && machine.phase == .writing && machine.wants.write && !machine.wants.read)
            next = machine.flushed(0, &context)
        }
        #expect(next == .wait && machine.phase == .readingRequest(started: false) && machine.bufferedInput == 0)
    }

    @Test("the requests before a deferred one are answered, those after wait unread and in order; reading stops until the answer")
    func pipelinedAroundDeferred() {
        var (machine, context, pending) = Self.setUp()
        let bytes = Array(
            "GET /a HTTP/1.1\r\nHost: localhost\r\n\r\nGET /later HTTP/1.1\r\nHost: localhost\r\n\r\nHEAD /b HTTP/1.1\r\nHost: localhost\r\n\r\nGET /c HTTP/1.1\r\nHost: localhost\r\n\r\n"
                .utf8)
        var (text, next) = bytes.withUnsafeBytes { Self.drain(&machine, machine.received($0, &context), &context) }
        #expect(next == .wait)
        #expect(text.hasSuffix("\r\n\r\n/a"), "only /a is answered: \(text)")
        #expect(machine.phase == .answering && machine.awaited != nil)
        #expect(!machine.wants.read && !machine.wants.write && !machine.wants.readingRequests)
        #expect(machine.deadline == context.now + ConnectionMachine.answerTimeout)
        // Given, then sent: the pipelined requests follow it, in order, HEAD without its body.
        pending.fulfil(AdminEndpoint.Answer(status: .ok, body: Array("page".utf8)))
        let response = AdminEndpoint { _ in nil }.resolve(machine.awaited!)!
        (text, next) = Self.drain(&machine, machine.answered(response, &context), &context)
        #expect(next == .wait && machine.awaited == nil && machine.phase == .readingRequest(started: false))
        let bodies = text.components(separatedBy: "\r\n\r\n").dropFirst().map { String($0.prefix(while: { $0 != "H" })) }
        #expect(bodies == ["page", "", "/c"], "\(text)")
        #expect(machine.bufferedInput == 0)
    }

    @Test("a deferred request with Connection: close lingers after its answer; a deferred answer behind pending output queues after it")
    func closeAndQueue() {
        var (machine, context, pending) = Self.setUp()
        let bytes = Array(
            "GET /later HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        var (_, next) = bytes.withUnsafeBytes { Self.drain(&machine, machine.received($0, &context), &context) }
        #expect(next == .wait && machine.phase == .answering)
        pending.fulfil(AdminEndpoint.Answer(status: .ok, body: Array("page".utf8)))
        var text: String
        (text, next) = Self.drain(&machine, machine.answered(AdminEndpoint { _ in nil }.resolve(machine.awaited!)!, &context), &context)
        #expect(next == .linger && text.contains("Connection: close") && !text.contains("/never"))

        // Given while the answers before it are still pending: it goes after them, and the
        // connection waits to write. The admin listener reads a deferred ask only once the answer
        // before it is written (one answer a turn); a connection that answers several a round
        // shows the machine's handling of one that comes behind output.
        let later: PendingAnswer
        (machine, context, later) = Self.setUp(admin: false)
        let pipelined = Array("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\nGET /later HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        next = pipelined.withUnsafeBytes { machine.received($0, &context) }
        #expect(next == .write && machine.awaited != nil)
        let first = context.out
        next = machine.sent(10, &context)
        #expect(next == .wait && machine.phase == .writing)
        later.fulfil(AdminEndpoint.Answer(status: .ok, body: Array("page".utf8)))
        next = machine.answered(AdminEndpoint { _ in nil }.resolve(machine.awaited!)!, &context)
        #expect(next == .wait && machine.phase == .writing && machine.wants.write && machine.awaited == nil)
        let queued = String(decoding: machine.output[machine.outputOffset...], as: UTF8.self)
        #expect(queued.hasPrefix(String(decoding: first[10...], as: UTF8.self)) && queued.hasSuffix("\r\n\r\npage"))
        next = machine.flushed(machine.output.count - machine.outputOffset, &context)
        #expect(next == .wait && machine.phase == .readingRequest(started: false))
    }

    @Test("a pending answer wakes whoever waits, once, even one that asks after it was given; the first answer given is kept")
    func pendingWakes() {
        let pending = PendingAnswer()
        let calls = Counter()
        pending.whenAnswered { calls.add() }
        #expect(calls.value == 0 && pending.answer == nil)
        pending.fulfil(AdminEndpoint.Answer(status: .ok, body: [1]))
        pending.fulfil(AdminEndpoint.Answer(status: .ok, body: [2]))
        #expect(calls.value == 1 && pending.answer?.body == [1])
        pending.whenAnswered { calls.add() }
        #expect(calls.value == 2)
    }

    @Test("a large answer is refused with 503 while others wait unsent, never when nothing waits; small ones always pass")
    func outputBound() {
        let output = AdminOutput()
        let endpoint = AdminEndpoint(output: output, replies: { _ in nil })
        let large = AdminEndpoint.Answer(status: .ok, body: [UInt8](repeating: 0, count: AdminOutput.maximumHeld))
        #expect(endpoint.frame(large, for: .get).status == .ok, "nothing waits: taken whatever its size")
        output.add(1)
        #expect(endpoint.frame(large, for: .get).status == .serviceUnavailable)
        #expect(endpoint.frame(AdminEndpoint.Answer(status: .ok, body: Array("ok\n".utf8)), for: .get).status == .ok)
        output.add(-1)
        #expect(endpoint.frame(large, for: .get).status == .ok)
    }
}

/// Answers through an admin endpoint, as the admin listener does.
private struct EndpointAnswerer: RequestAnswering {
    var dateLine = DateLine()
    let endpoint: AdminEndpoint

    mutating func answer(_ request: RequestView, peer: Peer, tls: Responder.TLSIdentity) -> Response {
        let target = String(decoding: request.target, as: UTF8.self)
        return endpoint.respond(method: request.method, authority: request.authority, target: target).answering(request.method)
    }

    mutating func refuse(_ status: Status, peer: Peer) -> Response { .error(status, close: true) }
}

@Suite("Connection state machine: one render's large answer shared")
struct AdminSharedAnswerTests {
    /// A render's answer given: a page of over half the bound on unsent bytes, with a tail.
    fileprivate static func rendered() -> (AdminOutput, AdminEndpoint, PendingAnswer, [UInt8]) {
        let output = AdminOutput()
        let pending = PendingAnswer()
        let page = [UInt8](repeating: 0x61, count: AdminOutput.maximumHeld / 2 + 1)
        pending.fulfil(AdminEndpoint.Answer(status: .ok, body: page, tail: Array("}".utf8)))
        return (output, AdminEndpoint(output: output, replies: { _ in nil }), pending, page)
    }

    @Test("the waiters of one render send its page from one storage, counted once: all are admitted, another large page is not")
    func sharedOnce() throws {
        let (output, endpoint, pending, page) = Self.rendered()
        var machines: [ConnectionMachine] = []
        for _ in 0..<3 {
            var context = ConnectionContext(
                now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: DeferringAnswerer(pending: pending))
            var machine = ConnectionMachine(
                peer: Peer(fd: -1, client: "-", isAdmin: true, counted: nil), tls: false, now: context.now, limits: context.limits)
            let ask = Array("GET /later HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
            _ = ask.withUnsafeBytes { machine.received($0, &context) }
            let response = endpoint.resolve(machine.awaited!)!
            #expect(response.status == .ok, "a waiter of the same render is admitted")
            // The head is written; the body waits in the answer's own storage.
            let next = machine.answered(response, &context)
            #expect(next == .write && String(decoding: context.out, as: UTF8.self).hasSuffix("\r\n\r\n"))
            #expect(machine.sent(context.out.count, &context) == .wait && machine.wants.write)
            let body = try #require(machine.sharedBody)
            #expect(AdminOutput.key(body) == AdminOutput.key(page) && machine.unsharedPending == 1)
            output.share(body)
            machines.append(machine)
        }
        #expect(output.held == page.count, "one page counted, not three")
        let other = AdminEndpoint.Answer(status: .ok, body: [UInt8](repeating: 0x62, count: AdminOutput.maximumHeld / 2 + 1))
        #expect(endpoint.frame(other, for: .get).status == .serviceUnavailable)
        // Written out: the page and its tail, then nothing is held.
        var context = ConnectionContext(
            now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: DeferringAnswerer(pending: pending))
        var sent = 0
        while machines[0].hasPendingOutput {
            let n = machines[0].output.count - machines[0].outputOffset
            sent += n
            _ = machines[0].flushed(n, &context)
        }
        #expect(sent == page.count + 1 && machines[0].sharedBody == nil)
        for _ in 0..<3 { output.unshare(AdminOutput.key(page)) }
        #expect(output.held == 0)
    }
}

extension AdminSharedAnswerTests {
    @Test("a waiter whose answer comes behind pending output queues the page shared, not copied: counted once, another page refused")
    func sharedBehind() throws {
        let (output, endpoint, pending, page) = Self.rendered()
        var context = ConnectionContext(
            now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: DeferringAnswerer(pending: pending))
        var held: [ConnectionMachine] = []
        for _ in 0..<2 {
            // Not an admin peer: the admin listener answers one request a turn, so its deferred
            // ask never comes behind output; one that answers several a round shows the handling.
            var machine = ConnectionMachine(
                peer: Peer(fd: -1, client: "-", isAdmin: false, counted: nil), tls: false, now: context.now, limits: context.limits)
            let asks = Array("GET /a HTTP/1.1\r\nHost: localhost\r\n\r\nGET /later HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
            #expect(asks.withUnsafeBytes { machine.received($0, &context) } == .write)
            #expect(machine.sent(10, &context) == .wait && machine.hasPendingOutput, "/a's answer is not all written")
            let response = endpoint.resolve(machine.awaited!)!
            #expect(response.status == .ok, "a waiter of the same render is admitted")
            #expect(machine.answered(response, &context) == .wait && machine.phase == .writing)
            let body = try #require(machine.sharedBody, "the page is held shared")
            #expect(AdminOutput.key(body) == AdminOutput.key(page))
            #expect(machine.output.count < 1024 && machine.unsharedPending < 1024, "no copy of the page: \(machine.unsharedPending)")
            output.add(machine.unsharedPending)
            output.share(body)
            held.append(machine)
        }
        #expect(output.held < page.count + 2048, "one page counted, not two: \(output.held)")
        let other = AdminEndpoint.Answer(status: .ok, body: [UInt8](repeating: 0x62, count: AdminOutput.maximumHeld / 2 + 1))
        #expect(endpoint.frame(other, for: .get).status == .serviceUnavailable)
        // Written out in order: /a's answer, the page's head, the page, its tail.
        var written: [UInt8] = []
        while held[0].hasPendingOutput {
            written += held[0].output[held[0].outputOffset...]
            _ = held[0].flushed(held[0].output.count - held[0].outputOffset, &context)
        }
        let text = String(decoding: written, as: UTF8.self)
        #expect(text.contains("\r\n\r\n/aHTTP/1.1 200 ") && text.hasSuffix("\r\n\r\n" + String(decoding: page, as: UTF8.self) + "}"))
        #expect(held[0].sharedBody == nil && held[0].phase == .readingRequest(started: false))
    }
}

extension AdminSharedAnswerTests {
    @Test("a page answered at once while another connection holds it unsent is sent shared, not copied; the asks after it wait")
    func sharedNow() throws {
        let output = AdminOutput()
        let page = [UInt8](repeating: 0x61, count: AdminOutput.maximumHeld / 2 + 1)
        let endpoint = AdminEndpoint(
            output: output, replies: { _ in .now(AdminEndpoint.Answer(status: .ok, body: page, tail: Array("}".utf8))) })
        output.share(page)  // another connection holds the page unsent
        var context = ConnectionContext(
            now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: EndpointAnswerer(endpoint: endpoint))
        var machine = ConnectionMachine(
            peer: Peer(fd: -1, client: "-", isAdmin: true, counted: nil), tls: false, now: context.now, limits: context.limits)
        let asks = Array(String(repeating: "GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 2).utf8)
        #expect(asks.withUnsafeBytes { machine.received($0, &context) } == .write)
        #expect(context.out.count < 1024 && String(decoding: context.out, as: UTF8.self).hasPrefix("HTTP/1.1 200 "), "the head only")
        let body = try #require(machine.sharedBody, "the page is held shared")
        #expect(AdminOutput.key(body) == AdminOutput.key(page))
        #expect(machine.sent(context.out.count, &context) == .wait && machine.unsharedPending == 1)
        // Written out: the page and its tail, then the second ask is answered the same way.
        var written: [UInt8] = []
        var next = ConnectionMachine.Next.wait
        while next == .wait, machine.hasPendingOutput {
            written += machine.output[machine.outputOffset...]
            next = machine.flushed(machine.output.count - machine.outputOffset, &context)
        }
        #expect(written.count == page.count + 1 && written.last == UInt8(ascii: "}"))
        #expect(next == .write && String(decoding: context.out, as: UTF8.self).hasPrefix("HTTP/1.1 200 ") && context.out.count < 1024)
        #expect(machine.sharedBody.map(AdminOutput.key) == AdminOutput.key(page))
    }
}

@Suite("Connection state machine: a large admin answer refused")
struct AdminRefusalTests {
    @Test("pipelined asks for a large page while others wait unsent: one 503 with Connection: close, the rest unanswered")
    func pipelinedRefusal() {
        let output = AdminOutput()
        let asks = Counter()
        let page = [UInt8](repeating: 0x61, count: AdminOutput.maximumHeld)
        let endpoint = AdminEndpoint(
            output: output,
            replies: { _ in
                asks.add()
                return .now(AdminEndpoint.Answer(status: .ok, body: page, tail: Array("}".utf8)))
            })
        var context = ConnectionContext(
            now: 1_000, milliseconds: 1_000_000, limits: Limits(), answerer: EndpointAnswerer(endpoint: endpoint))
        var machine = ConnectionMachine(
            peer: Peer(fd: -1, client: "-", isAdmin: true, counted: nil), tls: false, now: context.now, limits: context.limits)
        output.add(1)
        let bytes = Array(String(repeating: "GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 1_000).utf8)
        let next = bytes.withUnsafeBytes { machine.received($0, &context) }
        let text = String(decoding: context.out, as: UTF8.self)
        #expect(next == .write)
        #expect(text.hasPrefix("HTTP/1.1 503 ") && text.contains("Connection: close"), "\(text.prefix(300))")
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer")
        #expect(asks.value == 1, "the pipelined asks after the refusal are not answered")
        _ = machine.sent(context.out.count, &context)
        // Nothing waits: taken, the tail after the body.
        output.add(-1)
        let answer = endpoint.frame(AdminEndpoint.Answer(status: .ok, body: Array("{\"a\":1".utf8), tail: Array("}".utf8)), for: .get)
        var out: [UInt8] = []
        answer.serialize(into: &out, dateLine: [])
        #expect(
            String(decoding: out, as: UTF8.self).hasSuffix(
                "Content-Length: 7\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n{\"a\":1}"))
    }
}

private final class Counter: @unchecked Sendable {
    // @unchecked: touched only by the test's own thread (`fulfil` calls wake-ups on its caller's).
    var value = 0
    func add() { value += 1 }
}
