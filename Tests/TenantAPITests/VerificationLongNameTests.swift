import Foundation
import Reactor
import TestSupport
import Testing

@testable import TenantAPI

/// Names too long for `names/<name>.json` and its temporary file (DNS allows 253 bytes; Linux's
/// file names end at 255) are stored under a digested file name
/// (Sources/TenantAPI/VerificationStore+Files.swift), and every way a record is read finds them.
@Suite struct VerificationLongNameTests {
    /// A host name of exactly `length` bytes: labels of 63 bytes, under `.test`.
    static func name(length: Int, first: Character = "a") -> String {
        var labels: [String] = []
        var left = length - ".test".utf8.count
        while left > 0 {
            let size = min(63, left - (labels.isEmpty ? 0 : 1))
            labels.append(String(repeating: labels.isEmpty ? first : "b", count: size))
            left -= size + (labels.count > 1 ? 1 : 0)
        }
        let made = labels.joined(separator: ".") + ".test"
        precondition(made.utf8.count == length, "\(made.utf8.count) != \(length)")
        return made
    }

    @Test func everyLengthIsWrittenReadByAnotherReplicaAndRemoved() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let store = try VerificationStore(configDirectory: directory.path)
        let edge = VerificationStore.maximumComponentBytes
        let lengths = Set(Array(200...253) + [edge, edge + 1]).sorted()
        var names: [String] = []
        for length in lengths {
            let name = Self.name(length: length)
            names.append(name)
            try store.create(name, now: 0)
            let wildcard = "*." + Self.name(length: length - 2, first: "w")
            names.append(wildcard)
            try store.create(wildcard, now: 0)
        }
        let files = try Files.entries(of: directory.path + "/.aasad-verify/names")
        #expect(files.count == names.count, "one file per name, no temporary file left")
        #expect(files.allSatisfy { $0.utf8.count <= 255 - ".tmp-".utf8.count - 16 - 1 })
        let other = try VerificationStore(configDirectory: directory.path, creates: false)
        let states = VerificationStore.readStates(configDirectory: directory.path)
        for name in names {
            #expect(other.record(name)?.token == store.record(name)?.token, "\(name.utf8.count)")
            #expect(other.blocks(name))
            #expect(states[name] == false)
            #expect(other.reread(name)?.name == name)
        }
        // A verified write reaches the other replica's refresh.
        let long = try #require(names.last)
        var record = try #require(store.record(long))
        record.verified = true
        try store.write(record)
        other.refresh()
        #expect(other.record(long)?.verified == true && !other.blocks(long))
        for name in names { store.remove(name) }
        #expect(try Files.entries(of: directory.path + "/.aasad-verify/names").isEmpty)
        other.refresh()
        #expect(other.all().isEmpty)
    }

    /// A record under another name's digested file, junk of a digest's shape and a readable
    /// name's record copied to a digested file are no record of any name; a long name whose file
    /// becomes unreadable after a read keeps what memory holds of it.
    @Test func aDigestedFileCountsOnlyAsTheRecordOfItsOwnName() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let store = try VerificationStore(configDirectory: directory.path)
        let first = Self.name(length: 240)
        let second = Self.name(length: 241)
        try store.create(first, now: 0)
        try store.create("short.test", now: 0)
        let names = directory.path + "/.aasad-verify/names/"
        let firstFile = names + VerificationStore.component(first) + ".json"
        let secondFile = names + VerificationStore.component(second) + ".json"
        // The first name's record copied under the second's file, and a short name's too.
        try Data(try Files.readFile(firstFile, limit: 4096)).write(to: URL(fileURLWithPath: secondFile))
        let junk = String(repeating: "c", count: VerificationStore.maximumComponentBytes - 65) + "~" + String(repeating: "0", count: 64)
        try Data(try Files.readFile(names + "short.test.json", limit: 4096)).write(to: URL(fileURLWithPath: names + junk + ".json"))
        let other = try VerificationStore(configDirectory: directory.path, creates: false)
        // The second name has no record, yet its file stands for it: it waits, as a short name
        // whose file is no record of it does.
        #expect(other.record(second) == nil && other.blocks(second))
        #expect(VerificationStore.readStates(configDirectory: directory.path)[second] == false)
        #expect(other.all().map(\.name).sorted() == ["short.test", first].sorted())
        #expect(VerificationStore.readStates(configDirectory: directory.path).byName.keys.sorted() == ["short.test", first].sorted())
        // Asked by name, a file that is no record of it keeps that name gated (as a short name's).
        #expect(other.reread(second)?.token == "" && other.blocks(second))
        // Once read, a digested record whose file turns to junk keeps its name gated.
        var record = try #require(store.record(first))
        record.verified = true
        try store.write(record)
        other.refresh()
        #expect(other.record(first)?.verified == true)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: firstFile))
        other.refresh()
        #expect(other.record(first)?.verified == true, "a failed read never lifts or changes what memory holds")
    }

    /// A long name's gate holds through every refresh when its file cannot be read: in the
    /// replica that read it before, in the one that wrote it and never read it back, in one
    /// that starts with the file already broken, and in `aasad sites`' look.
    @Test func anUnreadableDigestedFileKeepsItsLongNameGated() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let writer = try VerificationStore(configDirectory: directory.path)
        let long = Self.name(length: 240)
        let other = Self.name(length: 241)
        try writer.create(long, now: 0)
        try writer.create(other, now: 0)
        let reader = try VerificationStore(configDirectory: directory.path, creates: false)
        #expect(reader.blocks(long))
        let file = directory.path + "/.aasad-verify/names/" + VerificationStore.component(long) + ".json"
        let otherFile = directory.path + "/.aasad-verify/names/" + VerificationStore.component(other) + ".json"
        let otherRecord = try Files.readFile(otherFile, limit: 4096)
        for broken in [Array("not json".utf8), otherRecord] {
            try Data(broken).write(to: URL(fileURLWithPath: file))
            for round in 1...3 {
                reader.refresh()
                writer.refresh()
                #expect(reader.blocks(long), "reader, refresh \(round)")
                #expect(writer.blocks(long), "writer, refresh \(round)")
            }
            let fresh = try VerificationStore(configDirectory: directory.path, creates: false)
            #expect(fresh.blocks(long) && fresh.blocks(other))
            fresh.refresh()
            #expect(fresh.blocks(long))
            let states = VerificationStore.readStates(configDirectory: directory.path)
            #expect(states[long] == false && states[other] == false && !states.isEmpty)
            #expect(states[Self.name(length: 242)] == nil && states["short.test"] == nil)
        }
        // Mended, the record is read again and its state is the file's.
        var record = try #require(writer.record(long))
        record.verified = true
        try writer.write(record)
        reader.refresh()
        #expect(!reader.blocks(long) && reader.record(long)?.verified == true)
        #expect(VerificationStore.readStates(configDirectory: directory.path)[long] == true)
    }
}
