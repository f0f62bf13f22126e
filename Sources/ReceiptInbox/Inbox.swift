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
        case duplicate(sha256: String, receipt: ReceiptID)
        case failed(String)
    }

    /// Where the file was found.
    public let path: String
    public let result: Result
    /// Where it went; nil when it stayed in the inbox (it changed just after its commit, or could
    /// not be moved).
    public let movedTo: String?
}

/// A watched folder whose complete files become receipts of one zone (docs/DESIGN.md, "Watched
/// inbox"). A file is complete when its size, mtime and ctime have not changed for `settle` and no
/// process holds it open for writing. Every complete file is handled alone, in two steps:
///
/// 1. it is read once through `Vault.importInboxFile`: in the transaction that would commit it, a
///    receipt of the zone unless its bytes are one already (a duplicate), and nothing at all when
///    the file is no longer as it was judged complete (asked after the read, just before the commit);
/// 2. only then is it renamed into `.imported/YYYY-MM/` (or `.failed/` with a `.error`).
///
/// A kill between 1 and 2 leaves the file in the inbox and its receipt committed; the next run finds
/// its bytes a receipt of the zone in step 1 and moves it as a duplicate. So a file is made a receipt
/// exactly once: the check for its bytes and the receipt are one transaction.
public final class Inbox {
    /// The watched folder, absolute.
    public let folder: String
    /// `folder` with its symbolic links resolved, as the kernel names the files processes hold open.
    private let realFolder: String
    private let vault: Vault
    private let zone: String
    private let interval: Duration
    private let settle: Duration
    private let lock: FileDescriptor
    /// Files that failed and could not be moved either: not tried again in this run unless they change.
    private var givenUp: [String: FileSignature] = [:]

    public init(folder given: String, vault: Vault, zone: String, interval: Double, settle: Double) throws {
        var path = given.hasPrefix("/") ? given : FileSystem.join(FileManager.default.currentDirectoryPath, given)
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard let st = try? FileSystem.status(path, followLinks: true) else {
            throw VaultError(.notFound, "cannot watch \(given): no such folder")
        }
        guard st.isDirectory else { throw VaultError(.badInput, "cannot watch \(given): not a folder") }
        for name in InboxMove.names {
            do { try InboxMove.requireRealFolder(FileSystem.join(path, name)) } catch let error as VaultError {
                throw VaultError(.badInput, "cannot watch \(given): \(error.message)")
            }
        }
        try vault.requireWritable(zone: zone)
        let lock: FileDescriptor
        do { lock = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY) } catch let error as PathError {
            throw VaultError(.badInput, "cannot watch \(given): \(error.message)")
        }
        // One watcher per inbox. A file system without flock on folders (some network ones) goes
        // without: two watchers would only race to move the same files.
        if (try? lock.tryLock()) == false {
            lock.close()
            throw VaultError(.badInput, "cannot watch \(given): another receipt watch is watching it")
        }
        self.folder = path
        realFolder = path.withCString { realpath($0, nil) }.map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? path
        self.vault = vault
        self.zone = zone
        self.interval = .nanoseconds(Int64(interval * 1e9))
        self.settle = .nanoseconds(Int64(settle * 1e9))
        self.lock = lock
    }

    deinit { lock.close() }

    /// Polls, and handles each file once it is complete, until `stop` is requested (after the file
    /// in flight) or, with `once`, until no file is left to wait for but those their writers still
    /// hold open. `waiting` hears, after each poll, how many files are not complete yet; `handled`
    /// runs after each poll that handled files.
    public func run(once: Bool, stop: StopRequest, report: (InboxOutcome) -> Void,
                    waiting: (Int) -> Void = { _ in }, handled: () -> Void = {}) throws {
        var judge = Completeness(settle: settle)
        let events = CloseEvents()
        while !stop.isRequested {
            var folders: [String] = []
            let entries = InboxScan.files(under: folder, folders: &folders).filter { givenUp[$0.path] != $0.signature }
            events.watch(folders)
            let now = ContinuousClock.now
            let settled = judge.settled(entries, now: now)
            let writing = OpenWriters.held(settled, under: realFolder)
            let ready = settled.filter { !writing.contains($0.path) }
            waiting(entries.count - ready.count)
            if once && entries.count == writing.count { return }
            for entry in ready where !stop.isRequested {
                if let outcome = try handle(entry) { report(outcome) }
            }
            if !ready.isEmpty { handled() }
            if once && !ready.isEmpty { continue }
            let poll = now + interval
            wait(until: judge.nextSettled(after: now).map { min($0, poll) } ?? poll, events: events, stop: stop)
            events.drain()
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

    /// Steps 1 and 2 for one complete file; nil when it vanished, or changed before its commit (it
    /// is judged again).
    private func handle(_ entry: InboxEntry) throws -> InboxOutcome? {
        if entry.signature.size == 0 { return fail(entry, "\(entry.path) is empty (0 bytes): there is nothing to import") }
        let path = entry.path, signature = entry.signature
        switch try vault.importInboxFile(path, zone: zone, unchanged: { FileSignature.of(path) == signature }) {
        case .changed:
            return nil
        case .failed(let message):
            return FileSignature.of(path) == nil ? nil : fail(entry, message)
        case .imported(let item):
            return moveIfUnchanged(entry, .imported(item))
        case .duplicate(let sha256, let receipt):
            return moveIfUnchanged(entry, .duplicate(sha256: sha256, receipt: receipt))
        }
    }

    /// Written to in the instant between its commit and now: the receipt holds the bytes read, and
    /// the file stays to be judged again (when complete, its bytes are imported or found a duplicate).
    private func moveIfUnchanged(_ entry: InboxEntry, _ result: InboxOutcome.Result) -> InboxOutcome {
        guard FileSignature.of(entry.path) == entry.signature else {
            return InboxOutcome(path: entry.path, result: result, movedTo: nil)
        }
        return move(entry, result)
    }

    /// Step 2: into `.imported/YYYY-MM/`. A file that cannot be moved stays, reported as failed.
    private func move(_ entry: InboxEntry, _ result: InboxOutcome.Result) -> InboxOutcome {
        do {
            let target = try InboxMove.move(entry.path, into: InboxMove.importedFolder(folder), inside: folder)
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
            let target = try InboxMove.move(entry.path, into: InboxMove.failedFolder(folder), inside: folder) {
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
