import Testing

@testable import AASA

@Suite("AppIdentifier's messages quote what they found through TerminalText")
struct AppIdentifierEscapingTests {
    @Test("an app identifier's bad character is quoted escaped: no ESC, CR or bidi override in the sentence")
    func appIdentifier() throws {
        for (identifier, shown) in [
            ("ABCDE1234\u{1B}.com.example", #"(found '\x1B')"#),
            ("ABCDE12345.com.\u{202E}elpmaxe", #"(found '\u{202E}')"#),
            ("ABCDE12345.com.x\r\nforged", #"(found '\x0D')"#),
            ("abcde\u{1B}[2J1.com.x", #"upper case, as Apple issues it ("ABCDE\x1B[2J1")"#),
        ] {
            let problem = try #require(AppIdentifier.problem(with: identifier))
            #expect(problem.contains(shown), "\(problem)")
            #expect(!problem.unicodeScalars.contains { TerminalText.isEscaped($0) }, "\(problem)")
        }
    }
}
