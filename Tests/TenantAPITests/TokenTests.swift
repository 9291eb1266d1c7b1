import Foundation
import Logging
import Testing

@testable import TenantAPI

@Suite struct TokenFileTests {
    static let digest = String(repeating: "ab", count: 32)

    static func file(_ token: String) -> String { "tokens:\n" + token }

    @Test(arguments: [
        // An unknown key anywhere.
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n    admin: true\n",
        // A digest in upper case, one digit short, one long, not hex.
        "  - name: a\n    sha256: \(digest.uppercased())\n    scope: write\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(digest.dropLast())\n    scope: write\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(digest)0\n    scope: write\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(String(repeating: "zz", count: 32))\n    scope: write\n    hosts: [\"*\"]\n",
        // No scope, a scope that is not one, the scope's case.
        "  - name: a\n    sha256: \(digest)\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: admin\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: Write\n    hosts: [\"*\"]\n",
        // Patterns that are not host names in their normal form.
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*.\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"A.example\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"a.*.example\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"a.example.\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*example.com\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"10.0.0.1\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: []\n",
        // A name with a space or a control character, none at all.
        "  - name: a b\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n",
        "  - name: \"a\\nb\"\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n",
        "  - sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n",
        // Two tokens with one name, or one digest.
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n  - name: a\n    sha256: \(String(repeating: "cd", count: 32))\n    scope: read\n    hosts: [\"*\"]\n",
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n  - name: b\n    sha256: \(digest)\n    scope: read\n    hosts: [\"*\"]\n",
        // Half written: cut in the middle of a key.
        "  - name: a\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n  - name: b\n    sha2",
    ])
    func aBadTokenRefusesTheWholeFile(_ token: String) {
        #expect(throws: APITokensFileError.self) { try APITokensFile.parse(Self.file(token)) }
    }

    @Test func aGoodFileParses() throws {
        let tokens = try APITokensFile.parse(APIFixture.tokensFile)
        #expect(tokens.map(\.name) == ["platform", "customer-a", "reader"])
        #expect(tokens[2].scope == .read)
        #expect(tokens[1].hosts == [.below("customer-a.example"), .exact("links.customer-a.com")])
    }

    @Test func unknownTopLevelKeysAndOtherShapesAreRefused() {
        for text in ["", "tokens: {}\n", "tokens: []\nextra: 1\n", "- a\n", "tokens:\n  - just-a-string\n"] {
            #expect(throws: APITokensFileError.self) { try APITokensFile.parse(text) }
        }
        #expect((try? APITokensFile.parse("tokens: []\n"))?.isEmpty == true)
    }

    @Test func patternsCoverAnyDepthBelowTheSuffixButNeverTheSuffix() {
        let below = APIHostPattern.below("customer-a.example")
        #expect(below.matches("x.customer-a.example"))
        #expect(below.matches("a.b.c.customer-a.example"))
        #expect(below.matches("*.customer-a.example"))
        #expect(!below.matches("customer-a.example"))
        #expect(!below.matches("evilcustomer-a.example"))
        #expect(!below.matches("x.customer-a.example.evil"))
        #expect(APIHostPattern.exact("a.example").matches("a.example"))
        #expect(!APIHostPattern.exact("a.example").matches("b.a.example"))
        #expect(APIHostPattern.any.matches("anything.example"))
    }
}

@Suite struct TokenStoreTests {
    @Test func aTokenIsFoundByItsDigestOnly() throws {
        let fixture = try APIFixture()
        #expect(fixture.tokens.token(presented: APIFixture.platform)?.name == "platform")
        #expect(fixture.tokens.token(presented: APIFixture.platform + "x") == nil)
        #expect(fixture.tokens.token(presented: APIFixture.sha(APIFixture.platform)) == nil)
        #expect(fixture.tokens.token(presented: "") == nil)
    }

    @Test func aChangedFileIsInForceAndABrokenOneKeepsTheLastGoodSet() throws {
        let fixture = try APIFixture()
        let path = fixture.directory.path("tokens.yaml")
        // A new token, written whole: in force at the next reload.
        let added =
            APIFixture.tokensFile + "  - name: late\n    sha256: \(APIFixture.sha("late-secret"))\n    scope: read\n    hosts: [\"*\"]\n"
        try Data(added.utf8).write(to: URL(fileURLWithPath: path))
        fixture.tokens.reload()
        #expect(fixture.tokens.token(presented: "late-secret")?.name == "late")
        // Half written: the last good set stays, and it is logged.
        try Data(added.utf8.prefix(added.utf8.count - 30)).write(to: URL(fileURLWithPath: path))
        fixture.tokens.reload()
        #expect(fixture.tokens.token(presented: "late-secret")?.name == "late")
        #expect(fixture.logs.messages().contains { $0.contains("refused") && $0.contains("stay in force") })
        // Unreadable (a directory where the file was): the same.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        fixture.tokens.reload()
        #expect(fixture.tokens.token(presented: APIFixture.platform)?.name == "platform")
        #expect(fixture.call("GET", "/v1/sites").status == 200)
    }

    @Test func aBadFileAtStartLeavesNoTokenAndEveryRequestIs401() throws {
        let noScope = APIFixture.tokensFile + "  - name: bad\n    sha256: \(APIFixture.sha(APIFixture.noScope))\n    hosts: [\"*\"]\n"
        let fixture = try APIFixture(tokens: noScope)
        #expect(fixture.tokens.tokens.isEmpty)
        #expect(fixture.logs.messages().contains { $0.contains("no token is accepted") })
        for token in [APIFixture.platform, APIFixture.noScope] {
            let answer = fixture.call("GET", "/v1/sites", token: token)
            #expect(answer.status == 401)
        }
        let missing = try APIFixture(tokens: nil)
        #expect(missing.call("GET", "/v1/sites").status == 401)
    }
}

@Suite struct TokenBoundsTests {
    static func token(_ name: String, patterns: Int) -> String {
        let hosts = (0..<patterns).map { "\"h\($0).example\"" }.joined(separator: ", ")
        return "  - name: \(name)\n    sha256: \(APIFixture.sha(name))\n    scope: read\n    hosts: [\(hosts)]\n"
    }

    @Test func patternsPerTokenAreBoundedAtN() throws {
        let n = APITokensFile.maximumPatterns
        #expect(try APITokensFile.parse("tokens:\n" + Self.token("a", patterns: n)).first?.hosts.count == n)
        #expect(throws: APITokensFileError.self) { try APITokensFile.parse("tokens:\n" + Self.token("a", patterns: n + 1)) }
    }

    @Test func tokensPerFileAreBoundedAtN() throws {
        let n = APITokensFile.maximumTokens
        let tokens = (0..<n).map { Self.token("t\($0)", patterns: 1) }.joined()
        #expect(try APITokensFile.parse("tokens:\n" + tokens).count == n)
        #expect(throws: APITokensFileError.self) { try APITokensFile.parse("tokens:\n" + tokens + Self.token("extra", patterns: 1)) }
    }

    @Test func aPresentedTokenIsReadUpToItsBound() throws {
        let n = TenantAPI.maximumTokenLength
        let long = String(repeating: "k", count: n)
        let longer = String(repeating: "k", count: n + 1)
        let file =
            "tokens:\n"
            + [long, longer].enumerated().map { index, secret in
                "  - name: l\(index)\n    sha256: \(APIFixture.sha(secret))\n    scope: read\n    hosts: [\"*\"]\n"
            }.joined()
        let fixture = try APIFixture(tokens: file)
        #expect(fixture.call("GET", "/v1/sites", token: long).status == 200)
        #expect(fixture.call("GET", "/v1/sites", token: longer).status == 401)
    }
}

@Suite struct TokensFileSyntaxMessageTests {
    /// A tokens file that fails to parse on a line holding a secret (a token pasted where its
    /// digest goes) is refused with a message that quotes that line only escaped and cut at
    /// `YAMLKeys.quotedLineLimit` characters: the secret's tail and its raw control bytes never
    /// reach the log.
    @Test func aSyntaxErrorDoesNotRepeatTheSecretLine() {
        let secret = "tok-" + String(repeating: "s3cr3t", count: 30) + "-END"
        let text = "tokens:\n  - name: a\n    sha256: \(secret): \u{1B}[2J\n"
        var message = ""
        do {
            _ = try APITokensFile.parse(text)
        } catch {
            message = error.description
        }
        #expect(message.contains("not YAML"), "\(message)")
        #expect(!message.contains(secret), "\(message)")
        #expect(!message.contains("-END"), "\(message)")
        #expect(!message.contains("\u{1B}"), "\(message)")
        #expect(!message.contains("\n"), "\(message)")
    }
}
