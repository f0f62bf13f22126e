import BlobStore
import GRDB
import ReceiptWire

/// Accounts over their whole life: several tokens per account (one per device, each with a label),
/// rotation and revocation that take effect at the next request, removal, and a storage quota.
/// Only a token's SHA-256 is stored, so the data folder never holds a usable credential.
extension ServerCatalog {
    /// Moves tokens out of `accounts` into `tokens` (the existing token keeps working as `default`),
    /// gives accounts a quota, and blobs the time an upload last touched them (for the server's gc).
    static func registerAccountMigrations(_ m: inout DatabaseMigrator) {
        m.registerMigration("server-v2-tokens-quota") { db in
            try db.execute(sql: """
                CREATE TABLE accounts2 (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    quota INTEGER CHECK (quota IS NULL OR quota >= 0),
                    createdAt INTEGER NOT NULL
                );
                INSERT INTO accounts2(id, name, quota, createdAt) SELECT id, name, NULL, createdAt FROM accounts;
                CREATE TABLE tokens (
                    id INTEGER PRIMARY KEY,
                    accountID INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    label TEXT NOT NULL,
                    tokenHash TEXT NOT NULL UNIQUE CHECK (length(tokenHash) = 64),
                    createdAt INTEGER NOT NULL,
                    UNIQUE (accountID, label)
                );
                INSERT INTO tokens(accountID, label, tokenHash, createdAt)
                    SELECT id, 'default', tokenHash, createdAt FROM accounts;
                DROP TABLE accounts;
                ALTER TABLE accounts2 RENAME TO accounts;
                ALTER TABLE blobs ADD COLUMN touchedAt INTEGER NOT NULL DEFAULT 0;
                UPDATE blobs SET touchedAt = createdAt;
                CREATE INDEX possessions_by_blob ON possessions(sha256);
                """)
        }
    }
}
