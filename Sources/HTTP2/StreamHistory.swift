/// What became of the client's most recent stream identifiers, in a few bytes: which ones it
/// opened (sent HEADERS on), and which of those it ended itself (END_STREAM or RST_STREAM), after
/// which it may send no DATA or HEADERS on them (RFC 9113 §5.1). nghttp2 keeps no closed streams while the session announces
/// SETTINGS_NO_RFC7540_PRIORITIES (keeping them cost 53.0 KB of RSS per attacking connection
/// instead of 28.2, docs/reliability.md), so without this a frame on such a stream was skipped
/// instead of being the error RFC 9113 §5.1 and §5.1.1 make it (`HTTP2Session.check`).
///
/// The `window` identifiers below and at `highest` are remembered, one bit each per map; an older
/// one is unknown, and a frame on it is skipped, as nghttp2 skips it.
struct StreamHistory {
    /// Client stream identifiers remembered, counting down from the highest one opened: above
    /// `HTTP2Session.maximumConcurrentStreams` (100), so that every stream a client can have had
    /// open at once is still known when its last frame arrives, in two 16-byte maps.
    static let window = 128

    /// The highest client stream identifier a HEADERS frame was sent on (0: none yet).
    private(set) var highest: Int32 = 0
    /// Bit k: a HEADERS frame was sent on stream `highest - 2k` (it was opened, or refused).
    private var opened: UInt128 = 0
    /// Bit k: the client ended or reset stream `highest - 2k`.
    private var ended: UInt128 = 0

    /// The bit of client stream `stream` in the maps, or nil when it is above `highest`, below the
    /// window, or not a client's (even, or 0).
    private func bit(_ stream: Int32) -> UInt128? {
        guard stream & 1 == 1, stream <= highest else { return nil }
        let k = Int(highest - stream) / 2  // both odd, so exact; highest - stream never overflows
        return k < Self.window ? UInt128(1) &<< k : nil
    }

    /// A HEADERS frame on `stream`, above `highest` (a new stream): the window moves up to it.
    mutating func open(_ stream: Int32) {
        guard stream & 1 == 1, stream > highest else { return }
        let move = highest == 0 ? Self.window : Int(stream - highest) / 2
        if move < Self.window {
            // Masking shifts (the amount is in range): this runs for every request.
            opened = opened &<< move | 1
            ended = ended &<< move
        } else {
            opened = 1
            ended = 0
        }
        highest = stream
    }

    /// Whether a HEADERS frame was sent on `stream`: nil when it is not in the window.
    func wasOpened(_ stream: Int32) -> Bool? {
        bit(stream).map { opened & $0 != 0 }
    }

    /// The client ended `stream` (a frame with END_STREAM that nghttp2 accepted) or reset it.
    mutating func end(_ stream: Int32) {
        if let bit = bit(stream) { ended |= bit }
    }

    /// Whether the client ended or reset `stream` (false when not known).
    func wasEnded(_ stream: Int32) -> Bool {
        bit(stream).map { ended & $0 != 0 } ?? false
    }
}
