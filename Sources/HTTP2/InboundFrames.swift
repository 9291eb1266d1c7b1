/// Where the client's frames begin and end in the bytes it sends, followed across reads: the frame
/// headers (RFC 9113 §4.1) and a PRIORITY frame's dependency (§6.3), read as they pass on their
/// way to nghttp2. The session uses it for what nghttp2 does not tell it while it keeps no closed
/// streams (SETTINGS_NO_RFC7540_PRIORITIES): a DATA frame on a stream nghttp2 no longer knows is
/// skipped without any callback, and a PRIORITY frame is skipped unread (`HTTP2Session.receive`).
/// It reads lengths exactly as nghttp2 does, so the two agree on every boundary until nghttp2 ends
/// the session (after which nothing is checked); it keeps no bytes, only a few counters.
struct InboundFrames {
    /// A point in the input at which a frame must be looked at before nghttp2 reads further.
    enum Checkpoint: Equatable {
        /// A DATA (0) or HEADERS (1) frame's header is complete: its type and stream.
        case frame(type: UInt8, stream: Int32)
        /// A PRIORITY frame of the right length (5 bytes) has its stream dependency complete: the
        /// stream it is sent on and the one it depends on (RFC 9113 §6.3; the exclusive bit
        /// masked off).
        case priority(stream: Int32, dependsOn: Int32)
    }

    /// The client connection preface, which comes before the first frame (RFC 9113 §3.4).
    static let prefaceLength = 24
    /// A frame header's length (RFC 9113 §4.1).
    static let headerLength = 9
    /// A stream identifier's 31 bits: the reserved bit is ignored on receipt (RFC 9113 §4.1), as
    /// nghttp2 does.
    static let streamMask: UInt32 = 0x7FFF_FFFF

    /// Preface bytes still to pass.
    private var prefaceLeft = Self.prefaceLength
    /// Bytes of the current frame header read so far (0 between frames).
    private var headerRead = 0
    /// The current frame's header, as it fills: payload length, type and stream.
    private var length = 0
    private var type: UInt8 = 0
    private var stream: UInt32 = 0
    /// Payload bytes of the current frame still to pass.
    private var payloadLeft = 0
    /// A PRIORITY frame's dependency as it fills, and its bytes read (0 to 4).
    private var dependency: UInt32 = 0
    private var dependencyRead = 0

    /// Reads `bytes` from `start` up to the next checkpoint: the index of the byte that completes
    /// it (that byte is read: continue from the next one) and what it is; nil when the rest of
    /// `bytes` holds none.
    mutating func next(in bytes: UnsafeRawBufferPointer, from start: Int) -> (at: Int, checkpoint: Checkpoint)? {
        var i = start
        let end = bytes.count
        while i < end {
            if prefaceLeft > 0 {
                let n = min(prefaceLeft, end - i)
                prefaceLeft -= n
                i += n
                continue
            }
            if payloadLeft > 0 {
                if type == 2 && length == 5 && dependencyRead < 4 {
                    dependency = dependency << 8 | UInt32(bytes[i])
                    dependencyRead += 1
                    payloadLeft -= 1
                    i += 1
                    // Only a PRIORITY frame that breaks a rule is a checkpoint: any other would split
                    // the input and cost nghttp2 a call per 14-byte frame, which it skips unread.
                    if dependencyRead == 4, stream == 0 || dependency & Self.streamMask == stream {
                        return (
                            i - 1,
                            .priority(stream: Int32(bitPattern: stream), dependsOn: Int32(bitPattern: dependency & Self.streamMask))
                        )
                    }
                    continue
                }
                let n = min(payloadLeft, end - i)
                payloadLeft -= n
                i += n
                continue
            }
            if headerRead == 0 && end - i >= Self.headerLength {
                // The usual case, a whole header in this read: read at once, not byte by byte
                // (this runs for every frame of every request).
                length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
                type = bytes[i + 3]
                stream =
                    (UInt32(bytes[i + 5]) << 24 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 8 | UInt32(bytes[i + 8]))
                    & Self.streamMask
                i += Self.headerLength
                payloadLeft = length
                dependency = 0
                dependencyRead = 0
                if type <= 1 { return (i - 1, .frame(type: type, stream: Int32(bitPattern: stream))) }
                continue
            }
            // A header split across reads, a byte at a time: the first of each field starts it
            // afresh.
            let byte = bytes[i]
            switch headerRead {
            case 0: length = Int(byte)
            case 1, 2: length = length << 8 | Int(byte)
            case 3: type = byte
            case 4: break  // flags: nothing here depends on them
            case 5: stream = UInt32(byte)
            default: stream = stream << 8 | UInt32(byte)
            }
            headerRead += 1
            i += 1
            guard headerRead == Self.headerLength else { continue }
            headerRead = 0
            stream &= Self.streamMask
            payloadLeft = length
            dependency = 0
            dependencyRead = 0
            if type <= 1 { return (i - 1, .frame(type: type, stream: Int32(bitPattern: stream))) }
        }
        return nil
    }
}
