import Foundation

extension Process {
    /// Kills the child with SIGKILL and waits for it, unless it has already been reaped. A kill
    /// of a reaped child's PID reaches whichever process the kernel gave that PID next, such as
    /// an aasad another test just started, which then exits silently before it is ready. While
    /// `isRunning` is true the child is not reaped (at most a zombie), so its PID is still its own.
    package func killAndWait() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}
