import Logging
import Synchronization

/// The log level and format in force, changed while serving when aasad.yaml's `logging` changes
/// (issue 15). Every handler reads them at each message, so a change applies to every logger at
/// once, those made before it included.
final class LogControl: Sendable {
    static let shared = LogControl()

    /// The level's index in `Logger.Level.allCases`, and 0x80 for JSON: one load per message.
    private let state = Atomic<UInt8>(UInt8(Logger.Level.allCases.firstIndex(of: .info)!))

    var level: Logger.Level { Logger.Level.allCases[Int(state.load(ordering: .relaxed) & 0x7F)] }
    var json: Bool { state.load(ordering: .relaxed) & 0x80 != 0 }

    func set(level: Logger.Level, json: Bool) {
        state.store(UInt8(Logger.Level.allCases.firstIndex(of: level)!) | (json ? 0x80 : 0), ordering: .relaxed)
    }
}

/// A handler that writes text (swift-log's stream handler) or JSON lines (`JSONLogHandler`) as
/// `LogControl` says, at the level it says.
struct SwitchingLogHandler: LogHandler {
    private var text: StreamLogHandler
    private var json: JSONLogHandler
    private let control: LogControl

    init(label: String, control: LogControl = .shared) {
        text = StreamLogHandler.standardError(label: label)
        json = JSONLogHandler(label: label)
        self.control = control
        text.logLevel = .trace
        json.logLevel = .trace
    }

    /// The level in force. Setting it here does nothing (it would change every logger's): the
    /// level is set through `LogControl` only.
    var logLevel: Logger.Level {
        get { control.level }
        set {}
    }

    var metadata: Logger.Metadata {
        get { json.metadata }
        set {
            json.metadata = newValue
            text.metadata = newValue
        }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { json[metadataKey: key] }
        set {
            json[metadataKey: key] = newValue
            text[metadataKey: key] = newValue
        }
    }

    func log(event: LogEvent) {
        // One load for the format; the level was checked by the Logger through `logLevel`.
        if control.json { json.log(event: event) } else { text.log(event: event) }
    }
}
