/// What `receipt server restore` asks `psql` of a PostgreSQL database before restoring into it
/// (ServerBackup.swift): a database with any table of its own is not empty, and is refused.
extension PostgresServerStore {
    static let countTablesSQL = "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
}
