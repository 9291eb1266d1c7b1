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

    /// Keeps the admin endpoint's count of unsent bytes in line with the connection's.
    func noteAdminOutput(_ c: Connection, _ output: AdminOutput) {
        let held = c.machine.output.count - c.machine.outputOffset
        if held != c.registration.heldOutput {
            output.add(held - c.registration.heldOutput)
            c.registration.heldOutput = held
        }
    }
}
