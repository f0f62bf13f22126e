import GRDB
import ReceiptCatalog

/// The way other modules (sync, watch) reach the vault's rows: one transaction at a time, through
/// the named verbs of `Catalog` and `CatalogWriter`, never through SQL of their own.
extension Vault {
    /// One read transaction (a consistent snapshot), for `Catalog`'s read verbs.
    public func catalogRead<T>(_ body: (Database) throws -> T) throws -> T {
        try catalog.read(body)
    }

    /// One write transaction: everything `body` does through the writer's verbs commits together,
    /// under the shared vault lock, on the catalog this vault opened (as `mutate`).
    @discardableResult
    public func catalogTransaction<T>(_ body: (CatalogWriter) throws -> T) throws -> T {
        try locked(.shared) { try catalog.transaction(body) }
    }
}
