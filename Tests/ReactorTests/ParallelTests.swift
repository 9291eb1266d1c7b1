import CAASALinux
import Foundation
import Glibc
import Synchronization
import Testing

@testable import Reactor

@Suite("Parallel.map: every core for large batches, in order")
struct ParallelTests {
    /// A result that counts how many of its kind are alive, to catch one released twice or never.
    final class Counted: Sendable {
        static let alive = Atomic<Int>(0)
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.alive.add(1, ordering: .relaxed)
        }
        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    @Test(
        "each element transformed once, results in the elements' order, around the threshold and past the slices",
        arguments: [0, 1, 63, 64, 65, 1_000, 10_007])
    func inOrder(count: Int) {
        let calls = Atomic<Int>(0)
        let elements = Array(0..<count)
        let results = Parallel.map(elements, threshold: 64) { element -> String in
            calls.add(1, ordering: .relaxed)
            return "element \(element)"
        }
        // Counted rather than compared whole: a failure names how many, not 10,007 strings.
        #expect(results.count == count)
        #expect(zip(results, elements).count { $0 != "element \($1)" } == 0)
        #expect(calls.load(ordering: .relaxed) == count)
    }

    @Test("references in the results are held once: alive while the array is, gone after")
    func referencesHeldOnce() {
        let before = Counted.alive.load(ordering: .relaxed)
        do {
            let results = Parallel.map(Array(0..<5_000), threshold: 64) { Counted($0) }
            #expect(results.count == 5_000)
            #expect(results.enumerated().count { $0.element.value != $0.offset } == 0)
            #expect(Counted.alive.load(ordering: .relaxed) - before == 5_000)
        }
        #expect(Counted.alive.load(ordering: .relaxed) == before)
    }

    @Test(
        "in a directory: each element once, in order, on threads of their own past the threshold, on the caller's at or below it",
        arguments: [0, 1, 64, 65, 1_000, 10_007])
    func inDirectoryInOrder(count: Int) throws {
        let root = try Files.openDirectory("/")
        defer { Files.close(root) }
        let calls = Atomic<Int>(0)
        let caller = pthread_self()
        let results = Parallel.map(Array(0..<count), in: root, threshold: 64) { element, inDirectory in
            calls.add(1, ordering: .relaxed)
            return (element: element, onCaller: pthread_equal(pthread_self(), caller) != 0, inDirectory: inDirectory)
        }
        #expect(results.count == count)
        #expect(results.enumerated().count { $0.element.element != $0.offset } == 0)
        #expect(calls.load(ordering: .relaxed) == count)
        if count <= 64 {
            #expect(results.allSatisfy { $0.onCaller && !$0.inDirectory })
        } else {
            #expect(!results.contains { $0.onCaller })
        }
    }

    @Test("in a directory: relative names resolve there on the batch's threads, and no other thread's working directory moves")
    func relativeNamesInDirectory() throws {
        let directory = NSTemporaryDirectory() + "aasad-parallel-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let names = (0..<300).map { "f\($0)" }
        for name in names { #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: nil)) }
        let descriptor = try Files.openDirectory(directory)
        defer { Files.close(descriptor) }
        let before = FileManager.default.currentDirectoryPath
        #expect(before != directory)
        // Another thread's working directory, read while the batch runs.
        let stop = Atomic<Bool>(false)
        let elsewhere = Mutex<Set<String>>([])
        let watching = DispatchGroup()
        DispatchQueue.global().async(group: watching) {
            repeat {
                let seen = FileManager.default.currentDirectoryPath
                elsewhere.withLock { _ = $0.insert(seen) }
            } while !stop.load(ordering: .relaxed)
        }
        let results = Parallel.map(names, in: descriptor, threshold: 64) { name, inDirectory in
            (inDirectory: inDirectory, found: access(name, F_OK) == 0)
        }
        stop.store(true, ordering: .relaxed)
        watching.wait()
        #expect(FileManager.default.currentDirectoryPath == before)
        #expect(elsewhere.withLock { $0 } == [before])
        // Where unshare(CLONE_FS) is allowed (not under a seccomp filter that refuses it), every
        // thread of the batch works in the directory.
        let probe = DispatchSemaphore(value: 0)
        let allowed = Mutex(false)
        let thread = Thread {
            allowed.withLock { $0 = CAASALinux_own_working_directory(descriptor) == 0 }
            probe.signal()
        }
        thread.start()
        probe.wait()
        if allowed.withLock({ $0 }) {
            #expect(results.allSatisfy { $0.inDirectory })
        }
        #expect(results.filter { $0.inDirectory }.allSatisfy { $0.found })
        #expect(results.contains { !$0.inDirectory } == !allowed.withLock { $0 })
    }
}
