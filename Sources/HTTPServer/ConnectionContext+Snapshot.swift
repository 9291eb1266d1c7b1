import Served

extension ConnectionContext where Answerer == Exchange {
    /// Takes `store`'s snapshot when it is not the one answering (one atomic load when it is),
    /// and forgets the last file head written (`FileHeadCache.forget`): the file it was written
    /// for may have been replaced or removed by the new snapshot, and the cache would keep it,
    /// its body included, alive until the worker served another file.
    mutating func refreshSnapshot(from store: SnapshotStore) {
        guard store.generation != answerer.snapshot.generation else { return }
        answerer.snapshot = store.snapshot()
        heads.forget()
    }
}
