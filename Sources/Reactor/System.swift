import CAASALinux
import Glibc

/// The outcome of a non-blocking system call: done, or it would block (try again on readiness).
public enum IOResult<T> {
    case done(T)
    case wouldBlock
}

/// An errno from a system call that failed for a reason the caller must handle (a peer reset,
/// too many open files, …). Programming errors (EBADF, EFAULT) never get here: they stop the
/// process, since continuing would act on someone else's descriptor.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let call: String
    public let errno: Int32

    public var description: String { "\(call): \(describeErrno(errno)) (errno \(errno))" }
}

/// One wrapper for every system call (swift-nio's System.swift does the same): EINTR is retried,
/// EAGAIN becomes `.wouldBlock`, EBADF and EFAULT are bugs and stop the process.
@inline(__always)
public func syscall<T: FixedWidthInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> IOResult<T> {
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let e = errno
        switch e {
        case EINTR:
            continue
        case EAGAIN, EWOULDBLOCK:
            return .wouldBlock
        case EBADF, EFAULT:
            fatalError("\(name()) failed with \(describeErrno(e)): a descriptor or buffer bug")
        default:
            throw SystemError(call: name(), errno: e)
        }
    }
}

/// A blocking-style call that must not block or be interrupted for long (setup calls): returns the
/// result or throws.
@inline(__always)
public func syscallOrThrow<T: FixedWidthInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
    switch try syscall(name(), body) {
    case .done(let v): return v
    case .wouldBlock: throw SystemError(call: name(), errno: EAGAIN)
    }
}

/// The C library's text for an errno value.
public func describeErrno(_ e: Int32) -> String {
    guard let text = strerror(e) else { return "error \(e)" }
    return String(validatingCString: text) ?? "error \(e)"
}
