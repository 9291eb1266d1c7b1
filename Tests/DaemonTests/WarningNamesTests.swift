import Testing

@testable import Daemon

/// The development certificate's warnings name the first hosts in order and count the rest
/// (`Daemon.named`), without sorting every host (a million at a large start).
@Suite("The hosts a warning names")
struct WarningNamesTests {
    @Test("the first names in order, whatever the order given, repeats included, and how many more")
    func firstInOrder() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<500 {
            let count = round % 40
            let names = (0..<count).map { _ in "h\(Int.random(in: 0..<30, using: &generator)).test" }
            let expected = Array(names.sorted().prefix(Daemon.hostsNamedInWarning))
            #expect(Daemon.firstNamed(names) == expected, "\(names)")
            let more = names.count - Daemon.hostsNamedInWarning
            #expect(Daemon.named(names) == expected.joined(separator: " ") + (more > 0 ? " (and \(more) more)" : ""))
        }
        #expect(Daemon.firstNamed([]) == [])
    }
}
