import Glibc
import Testing

@testable import TenantAPI

/// A client without a valid token, or over its rate, must not keep a connection slot: after a 401
/// or 429 the listener closes, and IPv6 peers count per /64 against the per-peer bound.
@Suite struct ListenerClosingTests {
    @Test(arguments: [401, 429])
    func anUnauthorizedOrLimitedAnswerClosesTheConnection(_ status: Int) throws {
        // The idle timeout is far longer than the read: a connection left open would not end in time.
        let server = try EchoListener(limits: .short(idle: .seconds(60)))
        let client = try #require(RawClient(port: server.port))
        client.send("GET /status/\(status) HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n")
        let (bytes, closed) = client.readUntilClose(seconds: 5)
        #expect(closed)
        let answers = RawResponse.parseAll(bytes)
        #expect(answers.map(\.status) == [status])
        #expect(answers.first?.headers["connection"] == "close")
        #expect(server.handled == 1)
    }

    /// A 200 keeps the connection (the closing is for the refusals only).
    @Test func aSuccessfulAnswerKeepsTheConnection() throws {
        let server = try EchoListener(limits: .short())
        let client = try #require(RawClient(port: server.port))
        client.send("GET /status/200 HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(client.readResponses(2).map(\.status) == [200, 200])
    }

    static func storage6(_ text: String) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                #expect(inet_pton(AF_INET6, text, &sin6.pointee.sin6_addr) == 1)
            }
        }
        return storage
    }

    static func storage4(_ text: String) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                sin.pointee.sin_family = sa_family_t(AF_INET)
                #expect(inet_pton(AF_INET, text, &sin.pointee.sin_addr) == 1)
            }
        }
        return storage
    }

    @Test func ipv6PeersCountPerSlash64AndIPv4PerAddress() {
        let a = peerBoundKey(Self.storage6("2001:db8:1:2:aaaa::1"))
        let b = peerBoundKey(Self.storage6("2001:db8:1:2:ffff:eeee:dddd:cccc"))
        let other = peerBoundKey(Self.storage6("2001:db8:1:3::1"))
        #expect(a == b)
        #expect(a == "2001:db8:1:2::/64")
        #expect(a != other)
        #expect(peerBoundKey(Self.storage4("192.0.2.1")) == "192.0.2.1")
        #expect(peerBoundKey(Self.storage4("192.0.2.1")) != peerBoundKey(Self.storage4("192.0.2.2")))
        // An IPv4-mapped address counts as its IPv4 address, not as the ::ffff:0:0/64 prefix.
        #expect(peerBoundKey(Self.storage6("::ffff:192.0.2.1")) == "192.0.2.1")
        #expect(peerBoundKey(Self.storage6("::ffff:192.0.2.1")) != peerBoundKey(Self.storage6("::ffff:192.0.2.2")))
    }
}
