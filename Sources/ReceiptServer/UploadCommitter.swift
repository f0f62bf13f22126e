import BlobStore
import Foundation

/// Makes verified uploads durable in groups: uploads that complete while a flush runs wait for the
/// next one and share it — one `BlobStore.install` (the bytes made durable, the renames, the renames
/// made durable) and then one catalog transaction recording them — instead of paying an fsync per
/// file, per folder and per commit each. Durability is the same: an upload is answered only after
/// the group holding it was installed and committed. The flush runs on its own thread, so fsync
/// never blocks the server's concurrency pool.
final class UploadCommitter: @unchecked Sendable {
    private struct Upload {
        let staged: StagedBlob
        let caller: Account
        let done: CheckedContinuation<Void, Error>
    }

    private let catalog: ServerCatalog
    private let lock = NSLock()
    private var waiting: [Upload] = []
    private var flushing = false

    init(catalog: ServerCatalog) {
        self.catalog = catalog
    }

    /// Installs the staged blob and records that `caller` possesses it.
    func commit(_ staged: StagedBlob, caller: Account) async throws {
        try await withCheckedThrowingContinuation { done in
            lock.lock()
            waiting.append(Upload(staged: staged, caller: caller, done: done))
            let start = !flushing
            flushing = true
            lock.unlock()
            if start { Thread { self.drain() }.start() }
        }
    }

    private func drain() {
        while true {
            lock.lock()
            let group = waiting
            waiting = []
            if group.isEmpty { flushing = false }
            lock.unlock()
            if group.isEmpty { return }
            do {
                let stored = try catalog.blobs.install(group.map(\.staged))
                try catalog.registerUploads(zip(stored, group).map { (id: $0.id, size: $0.size, caller: $1.caller) })
                for upload in group { upload.done.resume() }
            } catch {
                for upload in group { upload.done.resume(throwing: error) }
            }
        }
    }
}
