package import Foundation

/// A listener on 127.0.0.1 in another process with SO_REUSEPORT set, as aasad's listeners have
/// (Sources/Reactor/Socket.swift): a server of the same user that binds its port with
/// SO_REUSEPORT too succeeds, and the kernel splits the connections between them. It stands for
/// another test's server on a port both picked; `Loopback.listener(port:isOwnedBy:)` must then
/// tell the port is shared. Bound to `port` (0: any), killed by `stop()` or when the value goes.
package final class ReusePortListener {
    package let process = Process()
    package let port: Int
    private let directory: TemporaryDirectory

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package init(port requested: Int = 0) throws {
        directory = try TemporaryDirectory(prefix: "reuseport")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            Tool.python3, "-c",
            ReadyFile.python + """
                import socket, sys, time
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.bind(("127.0.0.1", int(sys.argv[2]))); s.listen()
                announce(s.getsockname()[1], sys.argv[1])
                time.sleep(60)
                """,
            directory.path("port"), String(requested),
        ]
        try process.run()
        guard let port = ReadyFile.port(directory.path("port"), of: process) else {
            process.killAndWait()
            throw Failure(description: "the SO_REUSEPORT listener announced no port (asked for \(requested))")
        }
        self.port = port
    }

    /// Ends the listener's process (idempotent). A test calls it in a `defer`, which also keeps
    /// this value alive to the end of its scope.
    package func stop() {
        process.killAndWait()
    }

    deinit { stop() }
}
