/// The admin worker's answers made on another thread (`PendingAnswer`): sent once given, and the
/// bytes its clients have not read counted against `AdminOutput`.
extension Worker {
    // MARK: - Answers made on another thread

    /// Sends the answers given since the last look to the connections waiting for them
    /// (`PendingAnswer`); the others keep waiting.
    func deliverAnswers() {
        let waiting = awaitingAnswers
        awaitingAnswers.removeAll(keepingCapacity: true)
        for c in waiting {
            guard connections[Int(c.fd)] === c, let deferred = c.machine.awaited else { continue }
            guard let response = context.answerer.admin?.resolve(deferred) else {
                awaitingAnswers.append(c)
                continue
            }
            c.registration.awaiting = false
            perform(c, c.machine.answered(response, &context))
        }
    }

    /// After a step of an admin connection: keeps the count of unsent bytes in line with the
    /// connection's, and watches for the answer it waits for, if it now waits for one.
    func noteAdminOutput(_ c: Connection, _ wants: ConnectionMachine.Wants) {
        if let adminOutput { c.machine.settle(adminOutput) }
        if wants.answering, !c.registration.awaiting, let deferred = c.machine.awaited {
            c.registration.awaiting = true
            awaitingAnswers.append(c)
            // `wake` is the one call on a loop that another thread may make.
            nonisolated(unsafe) let loop = loop
            deferred.pending.whenAnswered { loop.wake() }
        }
    }
}
