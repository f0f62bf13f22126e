import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

extension Vault {
    /// Checks the vault at `path` (docs/DESIGN.md, "fsck"): SQLite's integrity_check and
    /// foreign_key_check, every blob row against its file (present, regular, sizes, and unless
    /// `quick` re-hashed through decompression), inline blobs re-hashed, files no row records,
    /// stray files and staging files no running command owns. Problems stream to `onProblem` as
    /// they are found (with `repair`: once their repair was tried). Works on a vault whose catalog
    /// cannot be read (reporting it, or with `repair` rebuilding it); refuses a newer catalog.
    public static func fsck(at path: String, options: FsckOptions = FsckOptions(),
                            onProblem: @escaping @Sendable (FsckProblem) -> Void = { _ in },
                            progress: @escaping @Sendable (FsckProgress) -> Void = { _ in }) async throws -> FsckReport {
        let started = realtimeNanoseconds()
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let store = BlobStore(root: path)
        let sink = FsckSink(onProblem: onProblem, onProgress: progress)
        var trouble: String?
        do {
            try Catalog.inspect(catalogPath)
        } catch let error as CatalogError {
            switch error.code {
            case .newerSchema:
                throw VaultError(.unusableVault, error.description)
            case .absent:
                guard FileSystem.exists(store.blobsPath) else { throw VaultError(.unusableVault, error.description) }
                trouble = "the catalog \(catalogPath) is missing"
            case .unreadable:
                trouble = "the catalog \(catalogPath) cannot be read (\(error.detail))"
            }
        }
        // Repair changes files: it excludes every writer and gc. A check only keeps gc away (so no
        // row or file vanishes under it) and lets imports run; what they add meanwhile is re-checked.
        let lock: VaultLock?
        do {
            lock = try VaultLock(vaultPath: path, mode: options.repair ? .exclusive : .shared)
        } catch let error as IOError where error.errno == EROFS && !options.repair {
            lock = nil  // a read-only file system: nothing can change under the check, no lock needed
        } catch {
            throw VaultError.wrap(error)
        }
        defer { withExtendedLifetime(lock) {} }

        var vault: Vault?
        if trouble == nil {
            do {
                let opened = try Vault.open(at: path)
                vault = opened
                // --quick: SQLite's quick_check, which skips matching every index to its table (the
                // part whose cost grows faster than the catalog: 10 s of a 100,000-receipt --quick).
                let damage = try opened.catalog.read { db in
                    try String.fetchAll(db, sql: options.quick ? "PRAGMA quick_check" : "PRAGMA integrity_check").filter { $0 != "ok" }
                }
                if !damage.isEmpty {
                    trouble = "the catalog \(catalogPath) fails SQLite's integrity check: "
                        + damage.prefix(3).joined(separator: "; ") + (damage.count > 3 ? " (and \(damage.count - 3) more)" : "")
                }
            } catch {
                trouble = "the catalog \(catalogPath) cannot be read (\(VaultError.wrap(error)))"
            }
        }
        if let problem = trouble {
            try? vault?.close()
            vault = nil
            if options.repair {
                let summary = try await rebuildCatalog(vaultPath: path, store: store, options: options, sink: sink)
                sink.emit(FsckProblem(.catalog, path: catalogPath, detail: problem + "; " + summary, repaired: true))
                do { vault = try Vault.open(at: path) } catch { throw VaultError.wrap(error) }
            } else {
                sink.emit(FsckProblem(.catalog, path: catalogPath,
                                      detail: problem + ": run `receipt fsck --repair` to rebuild it from the blobs"))
                try await checkFilesWithoutCatalog(store, options: options, sink: sink)
            }
        }
        if let vault {
            defer { try? vault.close() }
            do {
                try await vault.checkInvariants(options, sink: sink)
                try vault.checkSearchIndex(repair: options.repair, quick: options.quick, sink: sink)
            } catch let error as CancellationError {
                throw error
            } catch {
                throw VaultError.wrap(error)
            }
        }
        checkPermissions(vaultPath: path, repair: options.repair, sink: sink)
        let problems = sink.problems
        return FsckReport(ok: problems.allSatisfy(\.repaired), checkedBlobs: sink.checkedBlobs,
                          checkedBytes: sink.checkedBytes, problems: problems, quick: options.quick,
                          repair: options.repair,
                          seconds: Double(realtimeNanoseconds() - started) / 1e9)
    }

    /// Verifies `items` on `workers` tasks at once (different files on different cores).
    /// `onOutcome` hears of each file as soon as it is verified (from the worker that did it).
    static func verifyAll(_ items: [VerifyItem], store: BlobStore, quick: Bool, workers: Int, sink: FsckSink,
                          onOutcome: @escaping @Sendable (VerifyItem, VerifyOutcome) -> Void = { _, _ in }) async -> [VerifyOutcome] {
        await verifyAllCounting(items, store: store, quick: quick, workers: workers, sink: sink, onOutcome: onOutcome).outcomes
    }

    /// `verifyAll`, also saying how many files were being verified at the same moment at most. The
    /// files are read on the blocking worker pool every importer and export uses (`Parallel.map`),
    /// off Swift's cooperative threads.
    static func verifyAllCounting(_ items: [VerifyItem], store: BlobStore, quick: Bool, workers: Int, sink: FsckSink,
                                  onOutcome: @escaping @Sendable (VerifyItem, VerifyOutcome) -> Void = { _, _ in })
        async -> (outcomes: [VerifyOutcome], peak: Int) {
        let counter = PeakCounter()
        sink.plan(blobs: items.count, bytes: items.reduce(0) { $0 + $1.storedSize })
        let results = await Parallel.offPool {
            Parallel.map(items, workers: max(1, workers)) { item -> VerifyOutcome in
                counter.enter()
                let outcome = verify(item, store: store, quick: quick)
                onOutcome(item, outcome)
                var hashed: Int64 = 0
                if case .good(_, _, _, let n) = outcome { hashed = n }
                if case .misrecorded(_, let n, _, _) = outcome { hashed = n }
                counter.leave()
                sink.checked(hashedBytes: hashed, plannedBytes: item.storedSize)
                return outcome
            }
        }
        return (results.map { (try? $0.get()) ?? .corrupt("was not checked") }, counter.peak)
    }

    /// One file: present and regular; with a row and `quick`, its size; otherwise re-hashed through
    /// decompression (the recorded encoding first, then the other).
    static func verify(_ item: VerifyItem, store: BlobStore, quick: Bool) -> VerifyOutcome {
        let st: FileStatus?
        do { st = try FileSystem.status(item.path) } catch { return .corrupt("cannot be examined: \(error)") }
        guard let st else { return .missing("no file at \(item.path)") }
        guard st.isRegular else { return .missing("\(item.path) is not a regular file") }
        if quick {
            if item.recorded == nil || st.size == item.storedSize { return .unhashed(storedSize: st.size) }
        }
        var order: [BlobEncoding] = [.identity, .xz]
        if let recorded = item.recorded { order = [recorded] + order.filter { $0 != recorded } }
        var firstDetail: String?
        for encoding in order {
            do {
                let size = try store.verify(item.id, encoding: encoding)
                guard let recorded = item.recorded else {
                    return .good(encoding: encoding, size: size, storedSize: st.size, hashed: size)
                }
                if encoding != recorded || size != item.size || st.size != item.storedSize {
                    return .misrecorded(encoding: encoding, size: size, storedSize: st.size, detail:
                        "the catalog records it as \(recorded.rawValue), \(item.size) bytes (\(item.storedSize) stored); "
                        + "the file is \(encoding.rawValue), \(size) bytes (\(st.size) stored)")
                }
                return .good(encoding: encoding, size: size, storedSize: st.size, hashed: size)
            } catch BlobError.corrupt(_, let detail) {
                firstDetail = firstDetail ?? detail
                continue
            } catch BlobError.missing {
                return .missing("no file at \(item.path)")
            } catch {
                return .corrupt("cannot be read: \(VaultError.wrap(error))")
            }
        }
        return .corrupt(firstDetail ?? "it does not hash to its address")
    }

    /// With no usable catalog: the blob files themselves (named by their hash, decodable) and the
    /// staging and stray files.
    static func checkFilesWithoutCatalog(_ store: BlobStore, options: FsckOptions, sink: FsckSink) async throws {
        let files: [BlobFile]
        do { files = try store.enumerate() } catch { throw VaultError.wrap(error) }
        let items = files.compactMap { f in f.id.map { VerifyItem(id: $0, path: f.path, recorded: nil, size: f.storedSize, storedSize: f.storedSize) } }
        let outcomes = await verifyAll(items, store: store, quick: options.quick, workers: options.workers, sink: sink)
        for (item, outcome) in zip(items, outcomes) {
            switch outcome {
            case .corrupt(let detail), .missing(let detail):
                sink.emit(FsckProblem(.corruptBlob, sha256: item.id.hex, path: item.path, detail: "blob \(item.id) \(detail)"))
            default: break
            }
        }
        for file in files where file.id == nil {
            sink.emit(FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a blob file (its name or place is not a blob's)"))
        }
        try reportInterim(store, repair: false, sink: sink)
    }

    /// Staging files no running command owns (stale) and anything under interim/ that is not a file.
    static func reportInterim(_ store: BlobStore, repair: Bool, sink: FsckSink) throws {
        let first: [InterimFile]
        do { first = try store.interimFiles() } catch { throw VaultError.wrap(error) }
        let suspects = first.filter { !$0.owned }
        guard !suspects.isEmpty else { return }
        // A staging file is locked right after it is created: look again before calling it stale.
        let again = Dictionary((try? store.interimFiles())?.map { ($0.path, $0) } ?? [], uniquingKeysWith: { a, _ in a })
        for file in suspects {
            guard let now = again[file.path], !now.owned, let st = try? FileSystem.status(file.path) else { continue }
            if !st.isRegular {
                var problem = FsckProblem(.unknownFile, path: file.path, detail: "\(file.path) is not a staging file")
                if repair {
                    do {
                        let target = try store.quarantine(file.path)
                        problem.repaired = true
                        problem.detail += "; moved to \(target)"
                    } catch { problem.detail += "; could not be moved to quarantine: \(VaultError.wrap(error))" }
                }
                sink.emit(problem)
                continue
            }
            var problem = FsckProblem(.staleInterim, path: file.path,
                                      detail: "staging file \(file.path) (\(st.size) bytes) is owned by no running command")
            if repair {
                do {
                    try FileSystem.remove(file.path)
                    problem.repaired = true
                    problem.detail += "; removed"
                } catch { problem.detail += "; could not be removed: \(VaultError.wrap(error))" }
            }
            sink.emit(problem)
        }
        if repair { try? FileSystem.syncDirectory(store.interimPath) }
    }
}
