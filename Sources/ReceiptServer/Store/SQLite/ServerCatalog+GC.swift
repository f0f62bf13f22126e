import BlobStore
import Foundation
import GRDB
import ReceiptCatalog

/// `receipt server gc` over SQLite: the plan-then-execute of GCRules.swift.
extension ServerCatalog {
    public func collectGarbage(graceSeconds: Int64, dryRun: Bool) async throws -> ServerGCReport {
        let lock = try ServerRules.gcLock(dataPath)
        defer { lock.close() }

        let cutoff = ServerRules.now() - graceSeconds * 1000
        var report = ServerGCReport(dryRun: dryRun)
        let planned = try await pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT sha256, size FROM blobs b
                WHERE touchedAt <= ? AND NOT EXISTS (SELECT 1 FROM recordBlobs rb WHERE rb.sha256 = b.sha256)
                ORDER BY sha256
                """, arguments: [cutoff]).map { ($0["sha256"] as String, $0["size"] as Int64) }
        }
        // An owner's texts of blobs its zones no longer reference count against its quota and are
        // read by nobody: they go whether or not the blob stays for others.
        let orphanTexts = """
            FROM blobTexts WHERE NOT EXISTS (SELECT 1 FROM recordBlobs rb JOIN zones z ON z.id = rb.zoneID
                                             WHERE rb.sha256 = blobTexts.sha256 AND z.ownerID = blobTexts.ownerID)
            """
        if dryRun {
            report.blobs = planned.map { ServerGCReport.Blob(sha256: $0.0, bytes: $0.1) }
            report.removedTexts = try await pool.read { try Int.fetchOne($0, sql: "SELECT count(*) " + orphanTexts) ?? 0 }
        } else {
            report.removedTexts = try await pool.write { db in
                try db.execute(sql: "DELETE " + orphanTexts)
                return db.changesCount
            }
            var rest = planned[...]
            while !rest.isEmpty {
                let batch = rest.prefix(ServerRules.gcBatch)
                rest = rest.dropFirst(batch.count)
                let removed = try await pool.write { db in
                    var removed: [ServerGCReport.Blob] = []
                    for (hex, size) in batch {
                        let still = try Bool.fetchOne(db, sql: """
                            SELECT EXISTS (SELECT 1 FROM blobs b WHERE b.sha256 = ?1 AND b.touchedAt <= ?2
                                AND NOT EXISTS (SELECT 1 FROM recordBlobs rb WHERE rb.sha256 = b.sha256))
                            """, arguments: [hex, cutoff]) ?? false
                        guard still, let id = BlobID(hex: hex) else { continue }
                        try db.execute(sql: "DELETE FROM possessions WHERE sha256 = ?", arguments: [hex])
                        try db.execute(sql: "DELETE FROM blobs WHERE sha256 = ?", arguments: [hex])
                        // Inside the transaction: no upload can record this blob until the file is gone.
                        try blobs.remove([id])
                        removed.append(ServerGCReport.Blob(sha256: hex, bytes: size))
                    }
                    return removed
                }
                report.blobs += removed
            }
        }
        ServerRules.finish(&report, blobs: blobs, cutoff: cutoff, dryRun: dryRun)
        if !dryRun {
            // The migrated catalog served and was collected from: its pre-upgrade copy has done its work.
            try CatalogCopy.removeBeforeMigrationCopies(of: FileSystem.join(dataPath, Self.fileName))
        }
        return report
    }
}
