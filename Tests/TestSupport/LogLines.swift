package import Logging
import Synchronization

/// Every line logged through `logger` (or a logger made with this handler), for tests that check
/// what was logged: its level, message and metadata, in order.
package final class LogLines: LogHandler, @unchecked Sendable {
    package struct Line: Sendable {
        package var level: Logger.Level
        package var message: String
        package var metadata: Logger.Metadata
    }

    private let lines = Mutex<[Line]>([])
    package var logLevel: Logger.Level = .trace
    package var metadata: Logger.Metadata = [:]

    package init() {}

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        lines.withLock { $0.append(Line(level: event.level, message: event.message.description, metadata: event.metadata ?? [:])) }
    }

    /// A logger whose every line lands here.
    package var logger: Logger { Logger(label: "test") { _ in self } }

    package var all: [Line] { lines.withLock { $0 } }
    package func messages() -> [String] { all.map(\.message) }
    /// The lines logged at warning level.
    package func warnings() -> [Line] { all.filter { $0.level == .warning } }
}
