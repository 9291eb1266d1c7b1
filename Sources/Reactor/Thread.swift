import Glibc

/// A joinable POSIX thread for a worker loop (a loop owns its thread for life; Foundation's
/// Thread is not joinable).
public struct LoopThread: Sendable {
    private let handle: pthread_t

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread; the caller hands over what `body` uses to that thread (a
    /// worker is used only by its own loop). A thread that cannot start is a resource failure at
    /// startup, not input: it stops the process with the reason.
    public static func spawn(_ body: @escaping () -> Void) -> LoopThread {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let result = pthread_create(
            &thread, nil,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        precondition(result == 0, "cannot start a worker thread: \(describeErrno(result))")
        return LoopThread(handle: thread)
    }

    /// Waits until the thread's body has returned.
    public func join() {
        pthread_join(handle, nil)
    }
}
