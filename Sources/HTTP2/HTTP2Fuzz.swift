import HTTPCore

/// The HTTP/2 fuzz target's shared-frame-buffer check (Fuzz/FuzzHTTP2.swift, scripts/fuzz.sh
/// http2), here so that the replay tests (Tests/HTTP2Tests/HTTP2FuzzReplayTests.swift) put every
/// saved input through the same steps, with a buffer shared as a worker shares it
/// (Sources/HTTPServer/Worker.swift makes one `SharedFrameBuffer` per worker for all its sessions).
enum HTTP2Fuzz {
    /// Bytes read and fed to the sessions at a time, as a worker's reads would split them.
    static let readSize = 4096
    /// Rounds of turns per read: each round lets every session write up to a step's bytes, so
    /// this bounds the output per read well past any input's responses' frames.
    static let turnsPerRead = 256

    /// Two sessions of one worker write their frames into one `SharedFrameBuffer`, taking turns in
    /// small steps (so that a frame of one is produced while the other's is half out): each must
    /// produce, byte for byte, what a session with a frame buffer of its own produces from the
    /// same input. Every request is answered with `fields` and `body`. The step is 1 to 700 bytes,
    /// as the input's last byte says. nil when both match; otherwise what differed.
    static func sharedFrameBuffer(_ bytes: [UInt8], fields: PreparedFields, body: [UInt8]) -> String? {
        let shared = SharedFrameBuffer()
        let sessions = [HTTP2Session(frameBuffer: shared), HTTP2Session(frameBuffer: shared), HTTP2Session()]
        var outputs: [[UInt8]] = [[], [], []]
        let step = 1 + Int(bytes.last ?? 0) % 700
        var alive = [true, true, true]
        for start in stride(from: 0, to: bytes.count, by: readSize) {
            let piece = bytes[start..<min(start + readSize, bytes.count)]
            for i in sessions.indices where alive[i] {
                alive[i] = piece.withUnsafeBytes { sessions[i].receive($0, now: 0) }
                sessions[i].answer { request in
                    sessions[i].respond(
                        stream: request.stream, status: .ok, fields: fields, date: Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8),
                        body: body, sendsBody: request.method == .get)
                }
            }
            // Turns of `step` bytes at most (a call past the limit finishes its frame's part).
            for _ in 0..<turnsPerRead {
                var wrote = false
                for i in sessions.indices where sessions[i].wantsWrite {
                    let before = outputs[i].count
                    sessions[i].produce(into: &outputs[i], limit: before + step)
                    wrote = wrote || outputs[i].count > before
                }
                if !wrote { break }
            }
        }
        for i in 0..<2 where outputs[i] != outputs[2] {
            let common = min(outputs[i].count, outputs[2].count)
            let at = (0..<common).first { outputs[i][$0] != outputs[2][$0] } ?? common
            return "sharing session \(i) wrote \(outputs[i].count) bytes, its twin \(outputs[2].count); they differ from byte \(at)"
        }
        return nil
    }
}
