package import Foundation
import HTTPServer
package import Logging
import Reactor

/// The running daemon's operations: reload (SIGHUP), settings applied, upgrade (SIGUSR2), stop,
/// and the signal loop that calls them.
extension Daemon {
    // MARK: - While serving

    /// The SIGHUP path: reopens the access log, reads the config directory again (through the
    /// watcher's full rescan when there is one, else here) and aasad.yaml with it.
    package func reload() {
        guard let running = serving else { return }
        SystemdNotify.send("RELOADING=1")
        do {
            try running.server.tuner.current.accessLog?.reopen()
        } catch {
            logger.error("\(error)")
        }
        running.api?.tokens.reload()
        if let watcher = running.watcher {
            watcher.requestFullRescan()
        } else {
            _ = running.follower.follow()
            running.serveReloaded(running.sites.reload { $0.reloadAll() }, nil)
            SystemdNotify.send("READY=1")
        }
        logger.info("reload requested (SIGHUP)")
    }

    /// Applies `settings` as a changed aasad.yaml would: what can change while serving changes,
    /// keys that need a new process are reported (`SettingsSchema`), an invalid value changes
    /// nothing. Returns whether anything was applied.
    @discardableResult
    package func apply(settings new: ServerSettings) -> Bool {
        guard let running = serving else { return false }
        let before = running.follower.inForce
        let problems = new.valueProblems(source: "settings")
        let prepareAgain = running.follower.follow(
            new, problems: problems.isEmpty ? new.consistencyProblems(source: "settings") : problems)
        if prepareAgain { running.serveReloaded(running.sites.reload { $0.reloadAll() }, nil) }
        return running.follower.inForce != before
    }

    /// The SIGUSR2 path: starts the binary this process was started from with the listening
    /// sockets; once it is ready, `handOver` runs (by default: SIGTERM to this process, so that
    /// its signal loop drains and exits).
    package func upgrade(handOver: (@Sendable (Int32) -> Void)? = nil) {
        guard let running = serving else { return }
        running.upgrade.begin(listeners: running.server.passableListeners()) { pid in
            SystemdNotify.send("MAINPID=\(pid)\nREADY=1\nSTATUS=upgraded: serving from pid \(pid)")
            if let handOver { handOver(pid) } else { kill(getpid(), SIGTERM) }
        }
    }

    // MARK: - Stop

    /// Stops: unready first, then (after `timeouts.shutdown-delay` when `drain`, waited by
    /// `waitDelay`) stops accepting; open connections get `timeouts.drain` to finish when
    /// `drain`, none otherwise. Returns once every worker has ended; a second call does nothing.
    package func stop(drain: Bool = true, reason: String = "requested", waitDelay: ((Int64) -> Void)? = nil) {
        guard let running, !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Read once: a hand-over that lands after this is refused by `abandon`.
        running.upgrade.abandon()
        let successor = running.upgrade.handedOverTo
        if let successor {
            logger.info("stopping: upgraded", metadata: ["newPID": "\(successor)"])
        } else {
            logger.info("stopping", metadata: ["signal": "\(reason)"])
        }
        running.ready.lower()
        // After a hand-over systemd's service is the new process: this one says nothing more.
        if successor == nil { SystemdNotify.send("STOPPING=1") }
        // Unready first, still serving: a load balancer that follows /readyz stops sending
        // before accepting stops.
        let delay = running.follower.inForce.shutdownDelay
        if drain && successor == nil && delay > 0, let waitDelay {
            logger.info("unready; serving \(delay) s more before accepting stops (timeouts.shutdown-delay)")
            waitDelay(delay)
        }
        running.api?.listener.stop()
        running.verification?.stop()
        running.watcher?.stop()
        if !drain {
            var limits = running.server.tuner.current.limits
            limits.drainTimeout = 0
            running.server.tuner.tune(limits: limits, accessLog: running.server.tuner.current.accessLog)
        }
        running.server.stop()
        running.acmeNames.children?.stop()
        running.certificateManager.value?.stop()
        running.cdnWatch.value?.stop()
        running.statusPages?.stop()
        if let path = running.follower.inForce.pidFile { PIDFile.remove(path) }
        // Pairs being checked after start end at the next pair (`stopped`); none may still be
        // in OpenSSL when the process exits.
        lateChecks.wait()
    }

    /// Serves until SIGTERM or SIGINT (then stops, draining), reloading on SIGHUP and upgrading
    /// on SIGUSR2. `signals`: the set `blockSignals` blocked before `start`.
    package func runUntilSignalled(_ signals: sigset_t) {
        var signals = signals
        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            if received == SIGHUP {
                reload()
                continue
            }
            if received == SIGUSR2 {
                upgrade()
                continue
            }
            // A second SIGTERM or SIGINT cuts the shutdown delay short.
            stop(drain: true, reason: received == SIGTERM ? "SIGTERM" : "SIGINT") { delay in
                let clock = MonotonicClock()
                let end = clock.milliseconds() + delay * 1000
                while clock.milliseconds() < end {
                    let left = end - clock.milliseconds()
                    var wait = timespec(tv_sec: Int(left / 1000), tv_nsec: Int(left % 1000) * 1_000_000)
                    let next = sigtimedwait(&signals, nil, &wait)
                    if next == SIGTERM || next == SIGINT { break }
                }
            }
            return
        }
    }
}
