import BlobStore
import PostgresNIO

/// `receipt server gc` over PostgreSQL, safe while any number of server processes run: the same
/// plan-then-execute as the embedded catalog's (GCRules.swift). Each planned blob is checked again
/// with its row locked (`FOR UPDATE`), its rows deleted and its file unlinked before the commit.
/// An upload on any process records the blob (`INSERT … ON CONFLICT DO UPDATE touched_at`, which
/// waits on that lock) before it renames the file into place, so it either touched the blob before
/// the check (spared) or inserts the row again after the commit and then installs the file whole;
/// a push finds the row gone and asks for the blob again.
extension PostgresServerStore {
    public func collectGarbage(graceSeconds: Int64, dryRun: Bool) async throws -> ServerGCReport {
        let lock = try ServerRules.gcLock(blobs.root)
        defer { lock.close() }
        let cutoff = ServerRules.now() - graceSeconds * 1000
        var report = ServerGCReport(dryRun: dryRun)
        let planned = try await transaction { db in
            try await db.rows("""
                SELECT sha256, size FROM blobs b
                WHERE touched_at <= \(cutoff) AND NOT EXISTS (SELECT 1 FROM record_blobs rb WHERE rb.sha256 = b.sha256)
                ORDER BY sha256
                """).map { try $0.decode((String, Int64).self) }
        }
        // As the embedded catalog: an owner's texts of blobs its zones no longer reference go.
        let orphanTexts = """
            FROM blob_texts t WHERE NOT EXISTS (SELECT 1 FROM record_blobs rb JOIN zones z ON z.id = rb.zone_id
                                                WHERE rb.sha256 = t.sha256 AND z.owner_id = t.owner_id)
            """
        if dryRun {
            report.blobs = planned.map { ServerGCReport.Blob(sha256: $0.0, bytes: $0.1) }
            report.removedTexts = try await transaction { db in
                try await db.value(PostgresQuery(unsafeSQL: "SELECT count(*)::BIGINT " + orphanTexts), as: Int64.self).map(Int.init) ?? 0
            }
        } else {
            report.removedTexts = try await transaction { db in
                try await db.run(PostgresQuery(unsafeSQL: "DELETE " + orphanTexts + " RETURNING 1"))
            }
            let store = blobs
            var rest = planned[...]
            while !rest.isEmpty {
                let batch = Array(rest.prefix(ServerRules.gcBatch))
                rest = rest.dropFirst(batch.count)
                report.blobs += try await transaction { db in
                    var removed: [ServerGCReport.Blob] = []
                    for (hex, size) in batch {
                        let still = try await db.value("""
                            SELECT 1 FROM blobs b WHERE b.sha256 = \(hex) AND b.touched_at <= \(cutoff)
                                AND NOT EXISTS (SELECT 1 FROM record_blobs rb WHERE rb.sha256 = b.sha256)
                            FOR UPDATE
                            """, as: Int32.self) != nil
                        guard still, let id = BlobID(hex: hex) else { continue }
                        try await db.run("DELETE FROM possessions WHERE sha256 = \(hex)")
                        try await db.run("DELETE FROM blobs WHERE sha256 = \(hex)")
                        // Inside the transaction: no upload can record this blob until the file is gone.
                        try store.remove([id])
                        removed.append(ServerGCReport.Blob(sha256: hex, bytes: size))
                    }
                    return removed
                }
            }
        }
        ServerRules.finish(&report, blobs: blobs, cutoff: cutoff, dryRun: dryRun)
        return report
    }
}
