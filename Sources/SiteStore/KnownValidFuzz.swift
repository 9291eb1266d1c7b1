/// The checks of the `verdicts` fuzz target (Fuzz/FuzzVerdicts.swift, scripts/fuzz.sh), here so
/// that the normal test run replays its corpus through the same code (VerdictsFuzzReplayTests).
///
/// The verdicts' file (`validated-contents` under the state directory, KnownValid.swift) is a
/// cache: a damaged one must cost a full validation, never a verdict for bytes nobody validated.
/// An input's first byte chooses how the rest becomes a file: bit 0 heads it with the header of
/// the binary `fuzz`; bit 1 reads the rest as groups of three bytes, each one line (a kind, a
/// digest made of two bytes, and, by the group's first byte, a flaw: an unknown kind, an
/// upper-case digit, a short or long line), so that repeats and disorder are cheap to find;
/// otherwise the rest is the file's bytes as they are. Then these must hold:
/// 1. the file is read whole or not at all: the keys read are exactly the lines of a reference
///    reading (below, written apart from the parser) when every line is well formed under the
///    right header, and none otherwise; the binary `fuzz2` reads it the same way for its header;
/// 2. the keys are sorted as their lines sort, each once, and each is found by `contains`; a
///    digest of another kind, one digit changed, or in upper case is not;
/// 3. the bytes written back (`fileBytes`) are the header and the distinct lines in byte order,
///    and read back to the same keys;
/// 4. keys inserted afterwards (groups with bit 5 set) are found, counted once, and written with
///    the rest.
public enum KnownValidFuzz {
    static let identity = "fuzz"

    /// The file's lines by a plain reading: nil unless `file` starts with the header of
    /// `identity` and the rest is lines of a kind letter, 64 lower-case hex digits and a newline.
    static func referenceLines(_ file: [UInt8], identity: String) -> [[UInt8]]? {
        let header = Array("aasad validated-contents 1 \(identity)\n".utf8)
        guard file.count >= header.count, Array(file[..<header.count]) == header else { return nil }
        let hex = Array("0123456789abcdef".utf8)
        var lines: [[UInt8]] = []
        var rest = file[header.count...]
        while !rest.isEmpty {
            guard let end = rest.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            let line = Array(rest[..<end])
            guard line.count == 65, Array("alc".utf8).contains(line[0]), line.dropFirst().allSatisfy(hex.contains) else { return nil }
            lines.append(line)
            rest = rest[(end + 1)...]
        }
        return lines
    }

    /// One line from a group of three bytes: `flags` picks the kind and a flaw, `a` and `b` the
    /// digest (their hex, varied by word and repeated).
    static func line(_ flags: UInt8, _ a: UInt8, _ b: UInt8) -> [UInt8] {
        let kinds = Array("alcl".utf8)
        var out = [flags & 7 == 7 ? UInt8(ascii: "x") : kinds[Int(flags & 3)]]
        // Each of the digest's four 64-bit words differs (a word compared wrongly shows).
        for word in 0..<4 {
            let pair = Array(String(format2(a ^ UInt8(word)) + format2(b &+ UInt8(word * 37))).utf8)
            for _ in 0..<4 { out += pair }
        }
        switch (flags >> 3) & 3 {
        case 1 where flags & 0x80 != 0: out.removeLast()  // a short line
        case 2 where flags & 0x80 != 0: out.append(UInt8(ascii: "0"))  // a long one
        case 3 where flags & 0x80 != 0:
            if let letter = out.dropFirst().firstIndex(where: { $0 >= UInt8(ascii: "a") }) { out[letter] -= 32 }  // upper case
        default: break
        }
        return out + [UInt8(ascii: "\n")]
    }

    static func format2(_ byte: UInt8) -> String {
        let hex = String(byte, radix: 16)
        return hex.count == 1 ? "0" + hex : hex
    }

    /// Runs one input; nil when every check held, else what failed.
    public static func check(_ input: [UInt8]) -> String? {
        guard let mode = input.first else { return nil }
        let rest = Array(input.dropFirst())
        var file = mode & 1 == 1 ? Array(KnownValid.header(identity: identity).utf8) : []
        var inserts: [[UInt8]] = []
        if mode & 2 == 2 {
            var index = 0
            while index + 3 <= rest.count {
                let text = line(rest[index], rest[index + 1], rest[index + 2])
                file += text
                if rest[index] & 0x20 != 0 { inserts.append(Array(text.dropLast())) }
                index += 3
            }
            file += rest[index...]
        } else {
            file += rest
        }
        for identity in [identity, identity + "2"] {
            if let failure = checkFile(file, identity: identity, inserts: identity == Self.identity ? inserts : []) {
                return "\(identity): \(failure)"
            }
        }
        return nil
    }

    static func checkFile(_ file: [UInt8], identity: String, inserts: [[UInt8]]) -> String? {
        var known = KnownValid.parse(file, identity: identity)
        let lines = referenceLines(file, identity: identity) ?? []
        var expected = Set(lines)
        if let failure = compare(known, expected, identity: identity, what: "read") { return failure }
        // A digest of another kind, with one digit changed, or in upper case is not a verdict.
        for (index, line) in expected.prefix(8).enumerated() {
            let hex = String(decoding: line.dropFirst(), as: UTF8.self)
            for kind in [KnownValid.Kind.aasa, .assetLinks, .certificate] {
                let other = [UInt8(kind.rawValue.asciiValue ?? 0)] + line.dropFirst()
                if !expected.contains(other),
                    known.contains(kind, digestHex: hex) || known.contains(kind, sha256: digestBytes(line.dropFirst()))
                {
                    return "a verdict of kind \(kind) for a line of another"
                }
            }
            // One digit changed, in each word in turn and at a place the line itself picks.
            var changed = Array(line.dropFirst())
            let place = (index % 4) * 16 + Int(line[1 + index % 64] % 16)
            changed[place] = changed[place] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            if !expected.contains([line[0]] + changed), let kind = KnownValid.Kind(rawValue: Character(UnicodeScalar(line[0]))),
                known.contains(kind, digestHex: String(decoding: changed, as: UTF8.self))
                    || known.contains(kind, sha256: digestBytes(changed[...]))
            {
                return "a verdict for a digest one digit off"
            }
            if hex.contains(where: \.isLetter), let kind = KnownValid.Kind(rawValue: Character(UnicodeScalar(line[0]))),
                known.contains(kind, digestHex: hex.uppercased())
            {
                return "a verdict for a digest in upper case"
            }
        }
        for line in inserts {
            guard line.count == 65, let kind = KnownValid.Kind(rawValue: Character(UnicodeScalar(line[0]))) else { continue }
            let hex = String(decoding: line.dropFirst(), as: UTF8.self)
            known.insert(kind, digestHex: hex)
            if referenceLines(Array("aasad validated-contents 1 \(identity)\n".utf8) + line + [10], identity: identity) != nil {
                expected.insert(line)
            }
        }
        return inserts.isEmpty ? nil : compare(known, expected, identity: identity, what: "after inserts")
    }

    /// The bytes 64 lower-case hex digits stand for, read here on their own (not by `KnownValid`).
    static func digestBytes(_ hex: ArraySlice<UInt8>) -> [UInt8] {
        func value(_ digit: UInt8) -> UInt8 { digit <= UInt8(ascii: "9") ? digit &- UInt8(ascii: "0") : digit &- UInt8(ascii: "a") &+ 10 }
        return stride(from: hex.startIndex, to: hex.endIndex - 1, by: 2).map { value(hex[$0]) &* 16 &+ value(hex[$0 + 1]) }
    }

    /// Whether `known` holds exactly `expected`, sorted and found, and writes them back as the
    /// reference would and reads them again the same.
    static func compare(_ known: KnownValid, _ expected: Set<[UInt8]>, identity: String, what: String) -> String? {
        let sortedLines = expected.sorted { $0.lexicographicallyPrecedes($1) }
        let texts = known.sortedKeys.map { Array($0.text.utf8) }
        guard texts == sortedLines else {
            let inOrder = texts == texts.sorted { $0.lexicographicallyPrecedes($1) }
            return "\(what): \(texts.count) keys (in order: \(inOrder)) where the reference has \(sortedLines.count)"
        }
        guard known.count == expected.count else { return "\(what): count \(known.count), \(expected.count) keys" }
        for line in sortedLines {
            guard let kind = KnownValid.Kind(rawValue: Character(UnicodeScalar(line[0]))),
                known.contains(kind, digestHex: String(decoding: line.dropFirst(), as: UTF8.self))
            else { return "\(what): a key read is not found" }
            // By the digest's bytes, as a load looks a file up (the hash it computed).
            guard known.contains(kind, sha256: digestBytes(line.dropFirst())) else {
                return "\(what): a key read is not found by its bytes"
            }
        }
        let written = known.fileBytes(identity: identity)
        let header = Array("aasad validated-contents 1 \(identity)\n".utf8)
        guard written == header + sortedLines.flatMap({ $0 + [UInt8(ascii: "\n")] }) else {
            return "\(what): written otherwise than sorted lines"
        }
        guard KnownValid.parse(written, identity: identity).sortedKeys == known.sortedKeys else { return "\(what): read back differently" }
        return nil
    }
}
