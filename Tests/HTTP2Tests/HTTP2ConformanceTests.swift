import HTTPCore
import Testing

@testable import HTTP2

/// The frames of h2spec 2.x's cases that aasad once failed (scripts/h2spec.sh), sent to a
/// session as h2spec sends them, so that the suite keeps them without h2spec: frames on
/// half-closed (remote) and closed streams (RFC 9113 §5.1) and PRIORITY frames the RFC calls
/// errors (§5.3.1, §6.3).
///
/// Known issues while the session announces SETTINGS_NO_RFC7540_PRIORITIES: nghttp2 then keeps no
/// closed streams and skips PRIORITY frames unread, and keeping them cost 53.0 KB of RSS per
/// attacking connection instead of 28.2 (docs/reliability.md, "HTTP/2 conformance"). Each case
/// passes with the setting removed; a fix that keeps the memory (aasad remembering the few
/// streams it closed last, checking PRIORITY frames itself) turns `withKnownIssue` into a failure
/// here, to be removed then.
@Suite("HTTP/2 session: h2spec's stream-state and PRIORITY cases")
struct HTTP2ConformanceTests {
    static let protocolError: UInt32 = 1
    static let streamClosed: UInt32 = 5

    /// A session past the preface, with `bytes` received and whatever it answered taken; then
    /// `then` received: the RST_STREAM and GOAWAY codes written after it.
    static func errors(after bytes: [UInt8], answering: Bool = true, then: [UInt8]) -> [String] {
        let session = HTTP2Session()
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + bytes))
        if answering { _ = HTTP2EarlyAnswerTests.answer(session) } else { _ = SessionIO.output(session) }
        _ = SessionIO.receive(session, then)
        return HTTP2EarlyAnswerTests.errors(HTTP2EarlyAnswerTests.answer(session).output)
    }

    /// STREAM_CLOSED as a stream or a connection error: RFC 9113 §5.1 allows either here.
    static func isStreamClosed(_ errors: [String]) -> Bool {
        errors == ["RST_STREAM \(streamClosed)"] || errors == ["GOAWAY \(streamClosed)"]
    }

    @Test("h2spec 5.1 #5, #11, 6.1 #2: DATA on a stream the client ended, answered or not yet, is STREAM_CLOSED")
    func dataAfterEndStream() {
        withKnownIssue("nghttp2 keeps no closed streams under SETTINGS_NO_RFC7540_PRIORITIES") {
            let data = ClientFrames.frame(type: 0, flags: 1, stream: 1, Array("test".utf8))
            // 6.1 #2 sends a POST. In the read that ended it (half-closed (remote)), and after the
            // answer (closed).
            for method in ["GET", "POST"] {
                let request = ClientFrames.get(stream: 1, method: method)
                let sameRead = Self.errors(after: [], then: request + data)
                let later = Self.errors(after: request, then: data)
                #expect(Self.isStreamClosed(sameRead), "\(method): \(sameRead)")
                #expect(Self.isStreamClosed(later), "\(method): \(later)")
            }
        }
    }

    @Test("h2spec 5.1 #6, #12: a second HEADERS on a stream the client ended is STREAM_CLOSED, not a second answer")
    func headersAfterEndStream() {
        withKnownIssue("nghttp2 keeps no closed streams under SETTINGS_NO_RFC7540_PRIORITIES") {
            let sameRead = Self.errors(after: [], then: ClientFrames.get(stream: 1) + ClientFrames.get(stream: 1))
            let later = Self.errors(after: ClientFrames.get(stream: 1), then: ClientFrames.get(stream: 1))
            #expect(Self.isStreamClosed(sameRead), "\(sameRead)")
            #expect(Self.isStreamClosed(later), "\(later)")
        }
    }

    @Test("h2spec 5.1 #8, #9: DATA or HEADERS after the client reset its stream is STREAM_CLOSED")
    func framesAfterClientReset() {
        withKnownIssue("nghttp2 keeps no closed streams under SETTINGS_NO_RFC7540_PRIORITIES") {
            let opened = ClientFrames.get(stream: 1, endStream: false) + ClientFrames.reset(stream: 1)
            let data = Self.errors(after: [], then: opened + ClientFrames.frame(type: 0, flags: 1, stream: 1, Array("test".utf8)))
            let headers = Self.errors(after: [], then: opened + ClientFrames.get(stream: 1))
            #expect(Self.isStreamClosed(data), "\(data)")
            #expect(Self.isStreamClosed(headers), "\(headers)")
        }
    }

    @Test("h2spec 6.3 #1: PRIORITY on stream 0 is a connection error PROTOCOL_ERROR (RFC 9113 §6.3)")
    func priorityOnStreamZero() {
        withKnownIssue("nghttp2 keeps no closed streams under SETTINGS_NO_RFC7540_PRIORITIES") {
            let errors = Self.errors(after: [], then: ClientFrames.frame(type: 2, flags: 0, stream: 0, [0, 0, 0, 1, 15]))
            #expect(errors == ["GOAWAY \(Self.protocolError)"], "\(errors)")
        }
    }

    @Test("h2spec 5.3.1 #2: a PRIORITY frame making a stream depend on itself is PROTOCOL_ERROR (RFC 9113 §5.3.1)")
    func priorityOnItself() {
        withKnownIssue("nghttp2 keeps no closed streams under SETTINGS_NO_RFC7540_PRIORITIES") {
            let errors = Self.errors(after: [], then: ClientFrames.frame(type: 2, flags: 0, stream: 1, [0, 0, 0, 1, 15]))
            #expect(errors == ["RST_STREAM \(Self.protocolError)"] || errors == ["GOAWAY \(Self.protocolError)"], "\(errors)")
        }
    }
}
