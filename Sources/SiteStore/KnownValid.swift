/// Contents already known to pass their validator, so that a load skips validating them again;
/// and certificate pairs known to load, so that it skips checking them again.
///
/// A validator's verdict is a pure function of the file's bytes and its kind (an AASA file, an
/// assetlinks.json), so a content seen valid once is valid again byte for byte: a full load of
/// 100,000 sites validates each distinct content once (sites often share one file), and a restart
/// validates only what changed since the last one (start-up time at scale). Only valid
/// verdicts are kept: an invalid file is validated again to report its errors. Keys are the
/// SHA-256 of the bytes with the kind, so no stat field (size, mtime, inode) has to be trusted.
///
/// Kept on disk under the state directory (`validated-contents`), written after each full load
/// with the contents then served, and headed by the running binary's identity: a new binary,
/// whose rules may differ, starts from nothing. The state directory is the server's own (it holds
/// the ACME account key), so the file is trusted as the server's memory; a damaged or foreign one
/// is ignored.
public struct KnownValid: Sendable {
    /// The kinds of file whose verdicts are kept (a page is not validated as JSON).
    public enum Kind: Character, Sendable {
        case aasa = "a"
        case assetLinks = "l"
        /// A certificate pair that loads and matches (`CertificateFiles.identity`, the SHA-256 of
        /// chain and key): a verdict of the TLS layer that depends on the bytes alone.
        case certificate = "c"
    }

    /// One key: a kind and the SHA-256 of the bytes, 33 bytes (40 with padding) held inline (the key as
    /// text, the kind's letter and 64 hex digits, was a String of its own: 133 bytes a key with
    /// its slot in a set, heaptrack at 10,000 sites). Ordered as its text form sorts.
    struct Key: Hashable, Comparable {
        let kind: UInt8
        let digest: (UInt64, UInt64, UInt64, UInt64)

        /// The key of `digestHex`, 64 lower-case hex digits (a SHA-256 as `Hex.string` writes
        /// it); nil for anything else, which no verdict is kept for.
        init?(_ kind: Kind, digestHex: some Collection<UInt8>) {
            guard digestHex.count == 64 else { return nil }
            var digits = digestHex.makeIterator()
            /// The next 16 digits as a number; nil at a byte that is not one.
            func word() -> UInt64? {
                var value: UInt64 = 0
                for _ in 0..<16 {
                    guard let byte = digits.next() else { return nil }
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(byte - UInt8(ascii: "0"))
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(byte - UInt8(ascii: "a") + 10)
                    default: return nil
                    }
                }
                return value
            }
            guard let a = word(), let b = word(), let c = word(), let d = word() else { return nil }
            self.kind = kind.rawValue.asciiValue ?? 0
            digest = (a, b, c, d)
        }

        /// The key of a SHA-256 given as its 32 bytes: its words read big-endian, as its hex
        /// digits give them (a file's verdict is looked up with the hash its read computed, not
        /// written in hex and parsed back); nil for another length.
        init?(_ kind: Kind, sha256: UnsafeRawBufferPointer) {
            guard sha256.count == 32 else { return nil }
            self.kind = kind.rawValue.asciiValue ?? 0
            digest = (
                UInt64(bigEndian: sha256.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: sha256.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: sha256.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: sha256.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            )
        }

        /// The key of `hex`, read from the string's UTF-8 storage (a digest's string is native, so
        /// no copy): iterating the string's UTF-8 view byte by byte was thousands of instructions a
        /// key, looked up for every file a start reads (callgrind, docs/benchmarks.md).
        init?(_ kind: Kind, hex: String) {
            var hex = hex
            guard let key = hex.withUTF8({ Key(kind, digestHex: $0) }) else { return nil }
            self = key
        }

        /// The kind's letter, then the lower-case hex digest: one line of the file.
        var text: String {
            var out = String(UnicodeScalar(kind))
            for word in [digest.0, digest.1, digest.2, digest.3] {
                let hex = String(word, radix: 16)
                out += String(repeating: "0", count: 16 - hex.utf8.count) + hex
            }
            return out
        }

        static func == (a: Key, b: Key) -> Bool { a.kind == b.kind && a.digest == b.digest }

        func hash(into hasher: inout Hasher) {
            hasher.combine(kind)
            hasher.combine(digest.0)
            hasher.combine(digest.1)
            hasher.combine(digest.2)
            hasher.combine(digest.3)
        }

        static func < (a: Key, b: Key) -> Bool {
            (a.kind, a.digest.0, a.digest.1, a.digest.2, a.digest.3) < (b.kind, b.digest.0, b.digest.1, b.digest.2, b.digest.3)
        }
    }

    /// The verdicts read at start or last remembered: sorted, each once, 40 bytes a key (a
    /// `Set` of the same keys took 105 bytes a key with its empty slots: docs/benchmarks.md).
    private(set) var sorted: [Key] = []
    /// Where each bucket of `sorted` starts (`bucket(_:)`), and past the last its end: a lookup
    /// searches one bucket, tens of keys side by side, rather than the whole array, whose
    /// every probe but the first few missed the cache (a restart looks up every file and pair it
    /// reads: 150,000 lookups over 150,000 keys at 100,000 sites took 0.09 s, docs/benchmarks.md).
    /// Empty when a key has no bucket (then the whole array is searched).
    private var starts: [UInt32] = []
    /// Verdicts added since (a load's new contents and pairs): few at a restart.
    private var added: Set<Key> = []

    /// Every verdict, sorted, each once.
    var sortedKeys: [Key] { added.isEmpty ? sorted : Self.normalized(sorted + added) }

    /// The keys as text (the file's lines).
    var keys: Set<String> { Set(sortedKeys.map(\.text)) }

    public init() {}

    /// The verdicts `keys`, in any order, repeated or not.
    init(keys: [Key]) { self.init(sorted: Self.normalized(keys)) }

    /// The verdicts `sorted`, already sorted and each once (as `sorted` or `sortedKeys` gave).
    init(sorted: [Key]) {
        self.sorted = sorted
        starts = Self.bucketStarts(sorted)
    }

    /// Bits of a digest's first word that choose its bucket within its kind: 4,096 buckets a kind
    /// (48 KB of starts for three kinds); at 100,000 sites half with a pair, about 24 keys an
    /// AASA bucket and 12 a pair's.
    static let bucketBits = 12

    /// A key's bucket: its kind's rank, then the first bits of its digest, so that buckets follow
    /// the keys' order; nil for a kind no file has.
    static func bucket(_ key: Key) -> Int? {
        let rank: Int
        switch key.kind {
        // The kinds' letters (`Kind`), in the order they sort.
        case UInt8(ascii: "a"): rank = 0
        case UInt8(ascii: "c"): rank = 1
        case UInt8(ascii: "l"): rank = 2
        default: return nil
        }
        return rank << bucketBits | Int(truncatingIfNeeded: key.digest.0 >> (64 - UInt64(bucketBits)))
    }

    /// The start of each bucket in `sorted` (sorted, as `Key.<` orders), and its end last.
    private static func bucketStarts(_ sorted: [Key]) -> [UInt32] {
        guard !sorted.isEmpty, sorted.count < Int(UInt32.max) else { return [] }
        var starts = [UInt32](repeating: 0, count: 3 << bucketBits + 1)
        for key in sorted {
            guard let bucket = bucket(key) else { return [] }
            starts[bucket + 1] += 1
        }
        for index in 1..<starts.count { starts[index] += starts[index - 1] }
        return starts
    }

    /// `keys` sorted, each once, in an array the size of what is kept: the served contents repeat
    /// (100,000 sites serving one file give 100,000 equal keys), and the verdicts are held for the
    /// process's life.
    static func normalized(_ keys: [Key]) -> [Key] {
        var keys = keys
        keys.sort()
        var kept = 0
        for index in keys.indices where kept == 0 || keys[kept - 1] != keys[index] {
            keys[kept] = keys[index]
            kept += 1
        }
        // A copy of exactly what is kept: the array sorted may have room to spare (built by
        // appending), whether or not keys repeated.
        return Array(keys[..<kept])
    }

    /// Whether `sorted` holds `key`: a binary search of its bucket.
    private func isStored(_ key: Key) -> Bool {
        var low = 0
        var high = sorted.count
        if !starts.isEmpty {
            guard let bucket = Self.bucket(key) else { return false }
            (low, high) = (Int(starts[bucket]), Int(starts[bucket + 1]))
        }
        while low < high {
            let middle = low + (high - low) / 2
            if sorted[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == key
    }

    public func contains(_ kind: Kind, digestHex: String) -> Bool {
        Key(kind, hex: digestHex).map(contains) ?? false
    }

    /// Whether a content of `kind` whose SHA-256 is `sha256` (its 32 bytes) was valid.
    public func contains(_ kind: Kind, sha256: [UInt8]) -> Bool {
        sha256.withUnsafeBytes { contains(kind, sha256: $0) }
    }

    /// The same for the 32 bytes at `sha256`.
    public func contains(_ kind: Kind, sha256: UnsafeRawBufferPointer) -> Bool {
        Key(kind, sha256: sha256).map(contains) ?? false
    }

    private func contains(_ key: Key) -> Bool { isStored(key) || added.contains(key) }

    mutating func insert(_ kind: Kind, digestHex: String) {
        if let key = Key(kind, hex: digestHex), !isStored(key) { added.insert(key) }
    }

    public var count: Int { sorted.count + added.count }

    /// The file's first line: format and the binary's identity.
    static func header(identity: String) -> String { "aasad validated-contents 1 \(identity)\n" }

    /// The length of one line of the file: the kind's letter, 64 hex digits and a newline.
    static let lineLength = 66

    /// The verdicts in `bytes`, the file as `fileBytes(identity:)` writes it for the binary
    /// `identity`; empty when the header is another's or any line is damaged (the file is a cache:
    /// a damaged one costs a full validation, never a verdict). Lines are parsed in the file's
    /// buffer, without a line buffer of their own; the file is written sorted, so the keys are kept
    /// as read unless they are not (then sorted and each kept once, costing time only).
    static func parse(_ bytes: [UInt8], identity: String) -> KnownValid {
        let header = Array(Self.header(identity: identity).utf8)
        guard bytes.starts(with: header), (bytes.count - header.count) % lineLength == 0 else { return KnownValid() }
        var keys: [Key] = []
        keys.reserveCapacity((bytes.count - header.count) / lineLength)
        var ordered = true
        let parsed = bytes.withUnsafeBufferPointer { buffer -> Bool in
            var start = header.count
            while start < buffer.count {
                guard buffer[start + lineLength - 1] == UInt8(ascii: "\n"),
                    let kind = Kind(rawValue: Character(UnicodeScalar(buffer[start]))),
                    let key = Key(kind, digestHex: UnsafeBufferPointer(rebasing: buffer[(start + 1)..<(start + lineLength - 1)]))
                else { return false }
                if let last = keys.last, !(last < key) { ordered = false }
                keys.append(key)
                start += lineLength
            }
            return true
        }
        guard parsed else { return KnownValid() }
        return ordered ? KnownValid(sorted: keys) : KnownValid(keys: keys)
    }

    /// The file's bytes for the binary `identity`: the header, then every verdict's line, sorted.
    func fileBytes(identity: String) -> [UInt8] {
        let keys = sortedKeys
        var bytes = Array(Self.header(identity: identity).utf8)
        bytes.reserveCapacity(bytes.count + keys.count * Self.lineLength)
        for key in keys {
            bytes += key.text.utf8
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }
}
