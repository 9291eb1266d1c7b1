import Foundation
import Logging

/// One JSON object per line on standard error (`--log-format json`), for log collectors:
/// `{"time": …, "level": …, "label": …, "message": …, "source": …, <metadata>…}`.
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String
    private static let lock = NSLock()

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
        fields["time"] = ISO8601DateFormatter().string(from: Date())
        fields["level"] = level.rawValue
        fields["label"] = label
        fields["message"] = message.description
        fields["source"] = source
        if let error = event.error { fields["error"] = "\(error)" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var data = try? encoder.encode(fields) else { return }
        data.append(10)
        Self.lock.lock()
        FileHandle.standardError.write(data)
        Self.lock.unlock()
    }
}
