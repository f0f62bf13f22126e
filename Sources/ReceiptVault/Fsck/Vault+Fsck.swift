import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

extension Vault {
    /// fsck of the vault at `path` (docs/DESIGN.md, "fsck"): `check`, and with `repair` then
    /// `repair` of what it found. Without `repair` problems stream to `onProblem` as they are found;
    /// with it, each once its repair was tried. Refuses a newer catalog.
    public static func fsck(at path: String, options: FsckOptions = FsckOptions(),
                            onProblem: @escaping @Sendable (FsckProblem) -> Void = { _ in },
                            progress: @escaping @Sendable (FsckProgress) -> Void = { _ in }) async throws -> FsckReport {
        let started = realtimeNanoseconds()
        // Repair changes files: it excludes every writer and gc. A check only keeps gc away (so no
        // row or file vanishes under it) and lets imports run; what they add meanwhile is re-checked.
        let lock: VaultLock?
        do {
            lock = try VaultLock(vaultPath: path, mode: options.repair ? .exclusive : .shared)
        } catch let error as PathError where error.errno == EROFS && !options.repair {
            lock = nil  // a read-only file system: nothing can change under the check, no lock needed
        } catch {
            throw VaultError.wrap(error)
        }
        defer { withExtendedLifetime(lock) {} }

        let sink: FsckSink
        if options.repair {
            let found = FsckSink(onProblem: { _ in }, onProgress: progress)
            try await check(at: path, options: options, sink: found)
            sink = FsckSink(onProblem: onProblem, onProgress: progress)
            sink.absorbCounts(found)
            // Held by this task: the repair's own ingests find the exclusive lock taken instead of waiting for it.
            guard let lock else { throw VaultError(.io, "fsck --repair cannot run without the vault lock") }
            try await lock.scope { try await repair(found.problems, at: path, options: options, sink: sink) }
        } else {
            sink = FsckSink(onProblem: onProblem, onProgress: progress)
            try await check(at: path, options: options, sink: sink)
        }
        let problems = sink.problems
        if problems.allSatisfy(\.repaired) {
            // The migrated catalog passed: the copy kept for rolling the upgrade back has done its work.
            do {
                try CatalogCopy.removeBeforeMigrationCopies(of: FileSystem.join(path, Catalog.fileName))
            } catch {
                throw VaultError.wrap(error)
            }
        }
        return FsckReport(ok: problems.allSatisfy(\.repaired), checkedBlobs: sink.checkedBlobs,
                          checkedBytes: sink.checkedBytes, problems: problems, quick: options.quick,
                          repair: options.repair,
                          seconds: Double(realtimeNanoseconds() - started) / 1e9)
    }

    /// The checker: SQLite's integrity_check and foreign_key_check, every blob row against its file
    /// (present, regular, sizes, and unless `quick` re-hashed through decompression), inline blobs
    /// re-hashed, files no row records, stray files and staging files no running command owns, the
    /// search index, permissions. Streams each problem to `sink` as it is found and changes nothing.
    /// Works on a vault whose catalog cannot be read (reporting it, and checking the files alone);
    /// refuses a newer catalog. The caller holds the vault lock.
    static func check(at path: String, options: FsckOptions, sink: FsckSink) async throws {
        let catalogPath = FileSystem.join(path, Catalog.fileName)
        let store = BlobStore(root: path)
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
        var vault: Vault?
        if trouble == nil {
            do {
                let opened = try Vault.open(at: path)
                vault = opened
                let damage = try opened.catalog.sqliteDamage(quick: options.quick)
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
            sink.emit(brokenCatalog(problem, at: catalogPath))
            // Before a repair the files are left to the rebuild, which verifies every one itself (and
            // the new catalog is checked again after it): checking them here too would read every
            // byte of the vault once more for nothing.
            if !options.repair { try await checkFilesWithoutCatalog(store, options: options, sink: sink) }
        }
        if let vault {
            defer { try? vault.close() }
            do {
                try await vault.checkInvariants(options, sink: sink)
                try vault.checkSearchIndex(quick: options.quick, sink: sink)
                try vault.checkKeptCounts(quick: options.quick, sink: sink)
                // A random blob row per attachment: 9 s at a million receipts, a full check's cost.
                if !options.quick { try vault.checkAttachmentCopies(sink: sink) }
            } catch let error as CancellationError {
                throw error
            } catch let error as DatabaseError where error.isDamage {
                // Damage SQLite's page check did not read (`--quick` leaves the derived tables out)
                // met while reading rows: a problem found, reported as the page check's would be.
                sink.emit(brokenCatalog("the catalog \(catalogPath) is damaged (\(error.message ?? "\(error.resultCode)"))",
                                        at: catalogPath))
            } catch {
                throw VaultError.wrap(error)
            }
        }
        checkPermissions(vaultPath: path, sink: sink)
    }

    /// A catalog that cannot be trusted (`problem` says why): the repair rebuilds it from the blobs.
    private static func brokenCatalog(_ problem: String, at catalogPath: String) -> FsckProblem {
        FsckProblem(.catalog, path: catalogPath, detail: problem + ": run `receipt fsck --repair` to rebuild it from the blobs",
                    fix: .rebuildCatalog(problem))
    }

}
