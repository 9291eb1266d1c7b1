import Foundation
import Glibc
import TestSupport
import Testing

@testable import ACME

/// The DNS hook runs with what a hook needs and nothing of the server's.
@Suite("the DNS hook program")
struct HookProgramTests {
    /// The descriptors `ls` finds open in a hook, each with where it leads.
    static func descriptors(in output: String) -> [Int: String] {
        var found: [Int: String] = [:]
        for line in output.split(separator: "\n") {
            // `ls -l`: "lrwx------ 1 root root 64 Nov 26 14:00 3 -> /proc/4242/fd".
            guard let arrow = line.range(of: " -> ") else { continue }
            let number = line[..<arrow.lowerBound].split(separator: " ").last.flatMap { Int($0) }
            if let number { found[number] = String(line[arrow.upperBound...]) }
        }
        return found
    }

    @Test("a hook starts with descriptors 0, 1 and 2 only, though the server holds others without close-on-exec")
    func onlyStandardDescriptors() throws {
        let folder = try TemporaryDirectory()
        // What libcurl leaves: a socket and a file without close-on-exec.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let file = open("/dev/null", O_RDONLY)
        defer {
            close(socket)
            close(file)
        }
        #expect(socket > 2 && file > 2)
        // The listing goes to a file (the hook's own output is cleaned into one line for the log);
        // 1 is then that file, 0 and 2 what the hook was given.
        try folder.write("hook", Array("#!/bin/sh\nexec ls -l /proc/self/fd/ > \"$0.fds\"\n".utf8))
        chmod(folder.path("hook"), 0o755)
        let result = try HookProgram.run(folder.path("hook"), ["add", "a.test", "x"])
        #expect(result.status == 0, "\(result.output)")
        let listing = try String(contentsOfFile: folder.path("hook.fds"), encoding: .utf8)
        let open = Self.descriptors(in: listing)
        #expect(Set(open.keys).isSuperset(of: [0, 1, 2]), "\(listing)")
        #expect(open[0] == "/dev/null" && open[2]?.hasPrefix("pipe:") == true, "\(listing)")
        // ls's own listing of /proc/self/fd is the one other descriptor.
        let others = open.filter { $0.key > 2 && !$0.value.hasSuffix("/fd") }
        #expect(others.isEmpty, "inherited: \(others)")
        #expect(open.filter { $0.key > 2 }.count <= 1, "\(listing)")
        // By number and by what it is: ls's directory can take the number the socket had here.
        #expect(open[Int(socket)]?.hasPrefix("socket:") != true && open[Int(file)] != "/dev/null", "\(listing)")
    }
}
