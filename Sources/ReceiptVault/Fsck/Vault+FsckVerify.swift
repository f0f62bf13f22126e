import BlobStore
import Foundation
import ReceiptCatalog

/// Verifying blob files on the shared blocking worker pool (`Parallel`), for the checker and the
/// catalog rebuild.
extension Vault {
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
                if case .good(let blob) = outcome { hashed = blob.size }
                if case .misrecorded(let blob, _) = outcome { hashed = blob.size }
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
                let blob = try store.verify(item.id, encoding: encoding)
                guard let recorded = item.recorded else { return .good(blob) }
                if encoding != recorded || blob.size != item.size || blob.storedSize != item.storedSize {
                    return .misrecorded(blob, detail:
                        "the catalog records it as \(recorded.rawValue), \(item.size) bytes (\(item.storedSize) stored); "
                        + "the file is \(encoding.rawValue), \(blob.size) bytes (\(blob.storedSize) stored)")
                }
                return .good(blob)
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
}
