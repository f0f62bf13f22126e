import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// What became of one file of the inbox.
public struct InboxOutcome: Sendable {
    public enum Result: Sendable {
        /// A new receipt (import's shape).
        case imported(ImportedFile)
        /// Its bytes were already a receipt of the zone: no receipt was added.
        case duplicate(sha256: String, receipt: String)
        case failed(String)
    }

    /// Where the file was found.
    public let path: String
    public let result: Result
    /// Where it went; nil when it stayed in the inbox (it changed while being imported, or could
    /// not be moved).
    public let movedTo: String?
}

/// A watched folder whose complete files become receipts of one zone (docs/DESIGN.md, "Watched
/// inbox"). Every file is handled alone, in three steps:
///
/// 1. its bytes are hashed; when they are already a receipt of the zone it is a duplicate;
/// 2. otherwise it is imported through `Vault.importFiles` (one commit);
/// 3. only then is it renamed into `.imported/YYYY-MM/` (or `.failed/` with a `.error`).
///
/// A kill between 2 and 3 leaves the file in the inbox and its receipt committed; the next run finds
/// its bytes in step 1 and moves it as a duplicate. So a file is made a receipt exactly once: step 2
/// runs only for bytes no receipt of the zone holds, and one watcher per inbox (a lock on the
/// folder) means nothing of ours adds them between 1 and 2.
public final class Inbox {
    /// The watched folder, absolute.
    public let folder: String
    private let vault: Vault
    private let zone: String
    private let interval: Duration
    private let lock: FileDescriptor
    /// Files that failed and could not be moved either: not tried again in this run unless they change.
    private var givenUp: [String: FileSignature] = [:]

    public init(folder given: String, vault: Vault, zone: String, interval: Double) throws {
        var path = given.hasPrefix("/") ? given : FileSystem.join(FileManager.default.currentDirectoryPath, given)
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard let st = try? FileSystem.status(path, followLinks: true) else {
            throw VaultError(.notFound, "cannot watch \(given): no such folder")
        }
        guard st.isDirectory else { throw VaultError(.badInput, "cannot watch \(given): not a folder") }
        try vault.requireWritable(zone: zone)
        let lock: FileDescriptor
        do { lock = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY) } catch let error as PathError {
            throw VaultError(.badInput, "cannot watch \(given): \(error.message)")
        }
        // One watcher per inbox. A file system without flock on folders (some network ones) goes
        // without: the inbox's own guarantees do not rest on it, only the exactly-once argument.
        if (try? lock.tryLock()) == false {
            lock.close()
            throw VaultError(.badInput, "cannot watch \(given): another receipt watch is watching it")
        }
        self.folder = path
        self.vault = vault
        self.zone = zone
        self.interval = .nanoseconds(Int64(interval * 1e9))
        self.lock = lock
    }

    deinit { lock.close() }

    /// Polls, and handles each file once it is complete, until `stop` is requested (after the file
    /// in flight) or, with `once`, until no file is left to wait for. `waiting` hears, after each
    /// poll, how many files are not complete yet.
    public func run(once: Bool, stop: StopRequest, report: (InboxOutcome) -> Void,
                    waiting: (Int) -> Void = { _ in }) throws {
        var judge = Completeness(interval: interval)
        let events = CloseEvents()
        while !stop.isRequested {
            var folders: [String] = []
            let entries = InboxScan.files(under: folder, folders: &folders).filter { givenUp[$0.path] != $0.signature }
            events.watch(folders)
            if once && entries.isEmpty { return }
            let ready = judge.complete(entries, now: .now)
            waiting(judge.waiting)
            for entry in ready {
                if let outcome = try handle(entry) { report(outcome) }
                if stop.isRequested { return }
            }
            if once && !ready.isEmpty { continue }
            wait(until: judge.nextDecision ?? .now + interval, events: events, stop: stop)
            for path in events.drain() {
                if let signature = FileSignature.of(path) { judge.noteClosed(path, signature) }
            }
        }
    }

    /// Sleeps until `deadline`, a close event or a stop request, whichever comes first.
    private func wait(until deadline: ContinuousClock.Instant, events: CloseEvents, stop: StopRequest) {
        var fds = [pollfd(fd: stop.wakeFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: events.fd, events: Int16(POLLIN), revents: 0)]
        let left = ContinuousClock.now.duration(to: deadline)
        let (seconds, attoseconds) = left.components
        let ms = max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        _ = poll(&fds, nfds_t(fds.count), Int32(clamping: ms))
    }

    /// Steps 1 to 3 for one complete file; nil when it vanished or changed before its import.
    private func handle(_ entry: InboxEntry) throws -> InboxOutcome? {
        let sha256: String
        do {
            guard let hash = try hashUnchanged(entry) else { return nil }
            sha256 = hash
        } catch let error as PathError {
            return fail(entry, error.description)
        }
        if let receipt = try vault.receipt(holdingContent: sha256, inZone: zone) {
            return move(entry, .duplicate(sha256: sha256, receipt: receipt))
        }
        let report: ImportReport
        do {
            report = try vault.importFiles([entry.path], zone: zone)
        } catch {
            // The file went away or was replaced by something else: nothing to report. Anything
            // else concerns the vault (the file was just read), and stops the watch.
            if FileSignature.of(entry.path) == nil { return nil }
            throw error
        }
        if let failure = report.failed.first {
            return FileSignature.of(entry.path) == nil ? nil : fail(entry, failure.error)
        }
        guard let item = report.imported.first else { return nil }
        let result: InboxOutcome.Result = item.existing ? .duplicate(sha256: item.sha256, receipt: item.id) : .imported(item)
        // Written to while it was imported: the receipt holds the bytes read, and the file stays
        // to be judged again (when complete, its bytes are imported or found a duplicate).
        guard item.sha256 == sha256, FileSignature.of(entry.path) == entry.signature else {
            return InboxOutcome(path: entry.path, result: result, movedTo: nil)
        }
        return move(entry, result)
    }

    /// The file's SHA-256, streamed; nil when it is gone, no longer a regular file, or not the
    /// file the poll judged complete (it changed since).
    private func hashUnchanged(_ entry: InboxEntry) throws -> String? {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(entry.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) } catch let error as PathError
            where error.errno == ENOENT || error.errno == ELOOP || error.errno == ENOTDIR {
            return nil
        }
        defer { fd.close() }
        var st = stat()
        guard fstat(fd.raw, &st) == 0, FileSignature(st) == entry.signature else { return nil }
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: BlobStore.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = try fd.read(into: buffer)
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        }
        guard fstat(fd.raw, &st) == 0, FileSignature(st) == entry.signature else { return nil }
        return hasher.finalize().hex
    }

    /// Step 3: into `.imported/YYYY-MM/`. A file that cannot be moved stays, reported as failed.
    private func move(_ entry: InboxEntry, _ result: InboxOutcome.Result) -> InboxOutcome {
        do {
            let target = try InboxMove.move(entry.path, into: InboxMove.importedFolder(folder))
            return InboxOutcome(path: entry.path, result: result, movedTo: target)
        } catch {
            givenUp[entry.path] = entry.signature
            let what: String
            switch result {
            case .imported(let item): what = "imported as receipt \(item.id)"
            case .duplicate(_, let receipt): what = "already receipt \(receipt)"
            case .failed(let message): what = message
            }
            return InboxOutcome(path: entry.path, result: .failed("\(what), but it cannot be moved to .imported/: \(error)"),
                                movedTo: nil)
        }
    }

    /// Into `.failed/NAME` beside `NAME.error`, written first.
    private func fail(_ entry: InboxEntry, _ message: String) -> InboxOutcome {
        do {
            let target = try InboxMove.move(entry.path, into: InboxMove.failedFolder(folder)) {
                try InboxMove.writeError(message, for: $0)
            }
            return InboxOutcome(path: entry.path, result: .failed(message), movedTo: target)
        } catch {
            givenUp[entry.path] = entry.signature
            return InboxOutcome(path: entry.path, result: .failed("\(message); it cannot be moved to .failed/ either: \(error)"),
                                movedTo: nil)
        }
    }
}
