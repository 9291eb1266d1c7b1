/// A name written as one file name that must fit in Linux's 255 bytes (NAME_MAX) together with
/// what its writer adds (a suffix, a temporary file's marks). A name that fits `maximumBytes` is
/// written as it reads; a longer one (a host name may be 253 bytes) as its first bytes, `~`, and
/// the SHA-256 of the whole name in lower-case hex, exactly `maximumBytes` long. Callers store
/// only names without `~` (host names, in docs/acme.md's "Storage" and docs/api.md's
/// verification), so a digested form is never another name's readable one, and every process
/// derives the same file from the same name.
package enum FittedName {
    /// What joins a digested form's readable start to its digest.
    package static let digestMark = UInt8(ascii: "~")
    package static let digestHexDigits = 2 * Digest.sha256Length

    /// `name` as a component of at most `maximumBytes` bytes (more than the digest and its mark).
    package static func component(_ name: String, maximumBytes: Int) -> String {
        precondition(maximumBytes > digestHexDigits + 1, "a fitted name has room for its digest")
        guard name.utf8.count > maximumBytes else { return name }
        // Lower-case hex written here: Hashing stands alone (the fuzz builds compile it with the
        // modules that use it, and HTTPCore's `Hex` is not among all of them).
        let digits = Array("0123456789abcdef".utf8)
        var digest = ""
        digest.reserveCapacity(digestHexDigits)
        for byte in Digest.sha256(name.utf8) {
            digest.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
            digest.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 15)]))
        }
        // The start is cut at a byte, and callers' names are ASCII: no character is split.
        let start = name.utf8.prefix(maximumBytes - 1 - digestHexDigits)
        return String(decoding: start, as: UTF8.self) + "~" + digest
    }

    /// Whether `entry` has the digested form's shape for `maximumBytes`: `maximumBytes` long, the
    /// mark at its place, lower-case hex after it, and every byte before it one `isNameByte`
    /// accepts. Which name it stands for is known only by reading what it holds and deriving
    /// the component again.
    package static func isDigested(_ entry: String, maximumBytes: Int, isNameByte: (UInt8) -> Bool) -> Bool {
        let bytes = Array(entry.utf8)
        let mark = maximumBytes - 1 - digestHexDigits
        guard bytes.count == maximumBytes, mark > 0, bytes[mark] == digestMark else { return false }
        let isHexDigit = { (c: UInt8) in (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) }
        return bytes[..<mark].allSatisfy(isNameByte) && bytes[(mark + 1)...].allSatisfy(isHexDigit)
    }
}
