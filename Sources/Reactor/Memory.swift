import CAASALinux

/// The C library's allocator, for the reloader.
public enum Memory {
    /// Gives freed memory in glibc's per-thread arenas back to the system (`malloc_trim(0)`):
    /// a full reload parses on every core, and without this the arenas keep their peak size.
    public static func trim() {
        _ = malloc_trim(0)
    }
}
