import Testing

@testable import SiteStore

@Suite("The one YAML key walker of site.yaml and aasad.yaml")
struct YAMLKeysTests {
    /// Walks `text` and lists what it reported, in order.
    private func walk(_ text: String, sections: Set<String> = []) -> [String] {
        var seen: [String] = []
        YAMLKeys.walk(text, isSection: { sections.contains($0) }) { entry in
            let value: String
            switch entry.value {
            case .scalar(let s): value = s
            case .list(let items): value = "[" + items.map { $0 ?? "nil" }.joined(separator: ",") + "]"
            case .other: value = "other"
            }
            seen.append("\(entry.path)=\(value)@\(entry.line ?? 0):\(entry.column ?? 0)")
        } fail: { failure in
            seen.append("\(failure)")
        }
        return seen
    }

    @Test("keys come in file order with 1-based lines and columns; sections are walked as section.key")
    func keysAndSections() {
        let text = "threads: 2\ntimeouts:\n  idle: 5\n  drain: [1, {a: b}]\nuser: {x: y}\n"
        #expect(
            walk(text, sections: ["timeouts"]) == ["threads=2@1:1", "timeouts.idle=5@3:3", "timeouts.drain=[1,nil]@4:3", "user=other@5:1"])
    }

    @Test("a section or file that is not a mapping, and bad YAML, are failures in file order; an empty file is none")
    func failures() {
        #expect(walk("a: 1\ntimeouts: 5\nb: 2\n", sections: ["timeouts"]) == ["a=1@1:1", "notMapping(section: \"timeouts\")", "b=2@3:1"])
        #expect(walk("- 1\n") == ["notMapping(section: \"\")"])
        #expect(walk("a: [\n").first?.hasPrefix("syntax(") == true)
        #expect(walk("").isEmpty)
    }
}
