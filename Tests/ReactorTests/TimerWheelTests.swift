import Testing

@testable import Reactor

@Suite("Timer wheel (injected clock)")
struct TimerWheelTests {
    @Test("an entry fires at its deadline, not before")
    func firesAtDeadline() {
        var wheel = TimerWheel(now: 100)
        wheel.schedule(.init(slot: 1, generation: 0), at: 105)
        var fired: [Int64] = []
        for second in Int64(101)...110 {
            wheel.advance(to: second) { _ in
                fired.append(second)
                return nil
            }
        }
        #expect(fired == [105])
    }

    @Test("a re-armed deadline re-files the entry instead of firing it")
    func rearmed() {
        var wheel = TimerWheel(now: 0)
        wheel.schedule(.init(slot: 7, generation: 1), at: 5)
        var deadline: Int64 = 12  // activity moved the deadline on
        var fired: [Int64] = []
        for second in Int64(1)...20 {
            wheel.advance(to: second) { _ in
                if deadline > second { return deadline }
                fired.append(second)
                return nil
            }
        }
        #expect(fired == [12])
        #expect(wheel.count == 0)
        deadline = 0
    }

    @Test("deadlines beyond the ring are parked and still fire on time")
    func longDeadline() {
        var wheel = TimerWheel(now: 0)
        let far = Int64(TimerWheel.slotCount * 3 + 5)
        wheel.schedule(.init(slot: 1, generation: 0), at: far)
        var fired: Int64?
        for second in Int64(1)...(far + 2) {
            wheel.advance(to: second) { _ in
                if far > second { return far }
                fired = second
                return nil
            }
        }
        #expect(fired == far)
    }

    @Test("a clock jump past the whole ring visits every entry once")
    func stall() {
        var wheel = TimerWheel(now: 0)
        for i in 0..<10 { wheel.schedule(.init(slot: Int32(i), generation: 0), at: Int64(i + 1)) }
        var seen = 0
        wheel.advance(to: 10_000) { _ in
            seen += 1
            return nil
        }
        #expect(seen == 10)
    }
}

@Suite("Socket addresses")
struct SocketAddressTests {
    @Test(
        "listen addresses parse",
        arguments: [
            ("127.0.0.1:8443", "127.0.0.1:8443"), ("[::1]:443", "[::1]:443"), (":443", "[::]:443"), ("localhost:0", "127.0.0.1:0"),
        ])
    func parses(_ text: String, _ expected: String) throws {
        #expect(try SocketAddress(parsing: text).description == expected)
    }

    @Test("bad addresses say what to write", arguments: ["127.0.0.1", "host.example:443", "1.2.3.4:99999", "1.2.3.4:x"])
    func refuses(_ text: String) {
        #expect(throws: SocketAddress.ParseError.self) { try SocketAddress(parsing: text) }
    }
}
