package import Foundation
package import Logging
package import Synchronization

/// One JSON object per line on standard error (`--log-format json`), for log collectors:
/// `{"time": …, "level": …, "label": …, "message": …, "source": …, <metadata>…}`.
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String
    /// The one formatter every line uses (not thread-safe), behind a lock; whole lines are
    /// serialised by `EscapingStandardError`, which writes them.
    private static let output = Mutex(ISO8601DateFormatter())

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level
        let message = event.message
        let explicit = event.metadata
        let source = event.source
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(explicit ?? [:], uniquingKeysWith: { $1 }) { fields[key] = "\(value)" }
        fields["time"] = Self.output.withLock { $0.string(from: Date()) }
        fields["level"] = level.rawValue
        fields["label"] = label
        fields["message"] = message.description
        fields["source"] = source
        if let error = event.error { fields["error"] = "\(error)" }
        var line = JSONOutput.compact(fields)
        guard !line.isEmpty else { return }
        line.append(10)
        EscapingStandardError.write(safeLine: line)
    }
}
