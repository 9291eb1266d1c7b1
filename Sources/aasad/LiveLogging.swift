import Logging
import Synchronization

/// The log level and format in force, changed while serving when aasad.yaml's `logging` changes
/// (issue 15). Every handler reads them at each message, so a change applies to every logger at
/// once, those made before it included.
final class LogControl: Sendable {
    static let shared = LogControl()

    private let state = Mutex<(level: Logger.Level, json: Bool)>((.info, false))

    var level: Logger.Level { state.withLock { $0.level } }
    var json: Bool { state.withLock { $0.json } }

    func set(level: Logger.Level, json: Bool) {
        state.withLock { $0 = (level, json) }
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

    /// The level in force; setting it on one logger would change every logger's, so it is set
    /// through `LogControl` only.
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
        if control.json { json.log(event: event) } else { text.log(event: event) }
    }
}
