package import AASA
package import Glibc
package import Logging
package import Synchronization

/// The log level and format in force, changed while serving when aasad.yaml's `logging` changes
/// (`Daemon+Live.swift`). Every handler reads them at each message, so a change applies to
/// every logger at once, those made before it included.
package final class LogControl: Sendable {
    package static let shared = LogControl()

    /// The level's index in `Logger.Level.allCases`, and 0x80 for JSON: one load per message.
    private let state = Atomic<UInt8>(UInt8(Logger.Level.allCases.firstIndex(of: .info)!))

    var level: Logger.Level { Logger.Level.allCases[Int(state.load(ordering: .relaxed) & 0x7F)] }
    var json: Bool { state.load(ordering: .relaxed) & 0x80 != 0 }

    package func set(level: Logger.Level, json: Bool) {
        state.store(UInt8(Logger.Level.allCases.firstIndex(of: level)!) | (json ? 0x80 : 0), ordering: .relaxed)
    }
}

/// A handler that writes text (swift-log's stream handler, through `EscapingStandardError`) or
/// JSON lines (`JSONLogHandler`) as `LogControl` says, at the level it says.
package struct SwitchingLogHandler: LogHandler {
    private var text: StreamLogHandler
    private var json: JSONLogHandler
    private let control: LogControl

    package init(label: String, control: LogControl = .shared) {
        text = StreamLogHandler(label: label, stream: EscapingStandardError())
        json = JSONLogHandler(label: label)
        self.control = control
        text.logLevel = .trace
        json.logLevel = .trace
    }

    /// The level in force. Setting it here does nothing (it would change every logger's): the
    /// level is set through `LogControl` only.
    package var logLevel: Logger.Level {
        get { control.level }
        set {}
    }

    package var metadata: Logger.Metadata {
        get { json.metadata }
        set {
            json.metadata = newValue
            text.metadata = newValue
        }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { json[metadataKey: key] }
        set {
            json[metadataKey: key] = newValue
            text[metadataKey: key] = newValue
        }
    }

    package func log(event: LogEvent) {
        // One load for the format; the level was checked by the Logger through `logLevel`.
        if control.json { json.log(event: event) } else { text.log(event: event) }
    }
}

/// Standard error for the text log, one line per event whatever the event holds: swift-log's
/// `StreamLogHandler` writes each event as one string, `time level label: metadata [source]
/// message` and a line feed (Sources/Logging/Handlers/StreamLogHandler.swift), and everything in
/// it before that line feed is escaped (`TerminalText`). Messages escape what they quote where
/// they are made; this is the last line of defence, for the message and the metadata alike: a
/// site.yaml line holding `\n2026-… error aasad: …` or an ESC sequence cannot forge an event or
/// reach the terminal.
package struct EscapingStandardError: TextOutputStream, Sendable {
    /// Serialises whole lines, as the JSON handler's lock does; true while the last line written
    /// was cut short (see `writeLine`).
    private static let lock = Mutex(false)

    /// How long one line waits for a standard error that is full and non-blocking (a pipe whose
    /// reader lags, set O_NONBLOCK by a process sharing it) before the rest of it is dropped: a
    /// blocking one would wait for ever, and the workers that log must not.
    static let stalledWriteMilliseconds: Int32 = 1000

    /// Best effort, as stdio's was: a reader of standard error that went away (a closed pipe, a
    /// closed descriptor) must not stop the server, so no error is raised.
    package mutating func write(_ string: String) {
        Self.write(safeLine: Self.line(string))
    }

    /// Writes a line with nothing left to escape (the JSON log's: `JSONOutput` escapes every
    /// control character) the way the text log's are: whole, one at a time, never stopping the
    /// process (FileHandle's `write(_:)` traps on EPIPE and EBADF).
    static func write(safeLine line: [UInt8]) {
        lock.withLock { cut in cut = writeLine(line, to: 2, afterCut: cut, waitMilliseconds: stalledWriteMilliseconds) }
    }

    /// Writes `line` whole to `fd`, through short writes, EINTR and EAGAIN (waiting for room at
    /// most `waitMilliseconds` in all), and says whether it was cut short. After a cut the
    /// next line starts with a line feed, so that it is never glued to the end of the cut one.
    static func writeLine(_ line: [UInt8], to fd: Int32, afterCut: Bool, waitMilliseconds: Int32) -> Bool {
        let bytes = afterCut ? [0x0A] + line : line
        let start = afterCut ? 1 : 0
        var offset = 0
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(waitMilliseconds))
        // Given up: cut if part of the line went out, or if the line feed owed is still owed.
        var cut: Bool { offset == 0 ? afterCut : offset > start }
        return bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                    continue
                }
                let e = errno
                if n < 0 && e == EINTR { continue }
                guard n < 0 && (e == EAGAIN || e == EWOULDBLOCK) else { return cut }
                var room = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let left = clock.now.duration(to: deadline).components
                let wait = max(0, min(Int64(waitMilliseconds), left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000))
                let ready = Glibc.poll(&room, 1, Int32(wait))
                // Room, or an error the next write reports (POLLERR, POLLNVAL); EINTR waits again.
                guard ready > 0 || (ready < 0 && errno == EINTR) else { return cut }
            }
            return false
        }
    }

    /// The event's text escaped, then the line feed that ends it (kept, and the only one). Bytes,
    /// not characters: a message ending in CR would make "\r\n" one character. A daemon in a
    /// test process logs through it too (Tests/DaemonTesting/TestDaemon.swift).
    package static func line(_ text: String) -> [UInt8] {
        var bytes = Array(text.utf8)
        let ended = bytes.last == 0x0A
        if ended { bytes.removeLast() }
        // Printable ASCII, nearly every event: no second copy.
        if !bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { bytes = Array(TerminalText.escaped(utf8: bytes).utf8) }
        if ended { bytes.append(0x0A) }
        return bytes
    }
}
