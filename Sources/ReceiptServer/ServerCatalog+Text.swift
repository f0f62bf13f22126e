import GRDB

/// The text members extracted from blobs, kept so that a household extracts (and OCRs) each blob
/// once: one row per blob and extractor version, `text` or (the extractor failed) `failure`.
extension ServerCatalog {
    static func registerTextMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v4-text") { db in
            try db.execute(sql: """
                CREATE TABLE blobTexts (
                    sha256 TEXT NOT NULL REFERENCES blobs(sha256) ON DELETE CASCADE,
                    version TEXT NOT NULL,
                    text TEXT,
                    failure TEXT,
                    uploadedAt INTEGER NOT NULL,
                    PRIMARY KEY (sha256, version),
                    CHECK ((text IS NULL) <> (failure IS NULL))
                ) WITHOUT ROWID;
                """)
        }
    }
}
