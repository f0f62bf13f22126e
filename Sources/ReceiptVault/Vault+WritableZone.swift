extension Vault {
    /// Throws the one-line error an import would give unless `zone` exists in this vault and its
    /// receipts may be changed: for a command (`receipt watch`) that checks before it starts waiting.
    public func requireWritable(zone: String) throws {
        try wrapped { try catalog.read { db in try requireWritable(db, zone) } }
    }
}
