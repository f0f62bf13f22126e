import GRDB
import ReceiptWire

/// The text members extracted from blobs, kept so that a household extracts (and OCRs) each blob
/// once: one row per zone owner, blob and extractor version, `text` or (the extractor failed)
/// `failure` (per owner since "server-texts-per-owner", ServerCatalog+TextOwners.swift: a text one
/// household stored is never another's).
extension ServerCatalog {
    /// The texts' table as server-v4-text made it (`blobTextsUnowned` since server-texts-per-owner),
    /// its address column `address` (text, then bytes since server-keys-as-bytes).
    static func textsTable(_ name: String, address: String) -> String {
        """
        CREATE TABLE \(name) (
            \(address) REFERENCES blobs(sha256) ON DELETE CASCADE,
            version TEXT NOT NULL,
            text TEXT,
            failure TEXT,
            uploadedAt INTEGER NOT NULL,
            PRIMARY KEY (sha256, version),
            CHECK ((text IS NULL) <> (failure IS NULL))
        ) WITHOUT ROWID;
        """
    }

    static func registerTextMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v4-text") { db in
            try db.execute(sql: textsTable("blobTexts", address: "sha256 TEXT NOT NULL"))
        }
        // Per account, a counter that moves whenever a text the account can read is stored (or the
        // account is given a zone), so its vaults ask about their blobs' texts only after it moved
        // (docs/PROTOCOL.md, "Extracted text"). A row counter, bumped in the writing transaction:
        // never a clock, and on PostgreSQL commit-ordered (a reader sees the bump with the text).
        m.registerMigration("server-v5-text-seq") { db in
            try db.execute(sql: """
                CREATE TABLE textSeqs (
                    accountID INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
                    seq INTEGER NOT NULL
                );
                """)
        }
    }
}
