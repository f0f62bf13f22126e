import BlobStore
import ArgumentParser
import Foundation
import ReceiptServer
import ReceiptVault

struct ServerBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a server's catalog and blobs into a new folder while it runs, or check such a copy.",
        discussion: """
            The catalog is copied at one moment (SQLite's online backup API, or pg_dump for \
            --database), then the blobs are hard-linked (copied across file systems); gc waits \
            meanwhile. manifest.json, written last, holds the counts --check verifies. Examples: \
            receipt server backup /srv/backup/2026-11-28 --data /var/lib/receipt; \
            receipt server backup --check /srv/backup/2026-11-28
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The backup folder: new, or empty.", valueName: "dest")) var destination: String
    @Option(help: ArgumentHelp("The server's data folder.", valueName: "dir")) var data: String?
    @Option(help: ArgumentHelp("The server's PostgreSQL database, when it keeps its catalog there.", valueName: "postgres://user@host/db"))
    var database: String?
    @Flag(help: "Verify the backup in DEST (every blob re-hashed, the catalog against its manifest); change nothing.")
    var check = false

    struct CheckResult: Encodable { let ok: Bool; let manifest: ServerBackupManifest; let problems: [String] }

    func run() async throws {
        if check {
            guard data == nil, database == nil else {
                throw ValidationError("--check reads only the backup folder: give it without --data or --database")
            }
            let (manifest, problems) = try ServerBackup.check(destination)
            if options.json {
                try Output.json(CheckResult(ok: problems.isEmpty, manifest: manifest, problems: problems))
            } else {
                for problem in problems { Output.line("problem: \(problem)") }
                Output.line("\(problems.isEmpty ? "ok" : "damaged"): \(destination) holds \(manifest.blobs) blob(s), "
                    + "\(ByteCount.text(manifest.blobBytes)), and a \(manifest.catalog) catalog of \(manifest.createdAt)")
            }
            if !problems.isEmpty { throw ExitCode(Failure.problems) }
            return
        }
        guard let data else { throw ValidationError("receipt server backup needs --data DIR, the server's data folder") }
        let manifest = try await ServerBackup.take(dataPath: data, database: try ServerDatabase(database), destination: destination)
        if options.json { return try Output.json(manifest) }
        Output.line("backed up the \(manifest.catalog) catalog and \(manifest.blobs) blob(s), \(ByteCount.text(manifest.blobBytes)) "
            + "(\(manifest.linkedBlobs) hard-linked), to \(destination)")
    }
}

struct ServerRestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make a new server data folder (and database) from a backup; refuses a target that is not empty.",
        discussion: """
            The backup is checked first. Stop nothing: the target is new, so start a server on it \
            when done. Example: receipt server restore /srv/backup/2026-11-28 --data /var/lib/receipt
            """)

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The backup folder `receipt server backup` made.", valueName: "backup")) var source: String
    @Option(help: ArgumentHelp("The new data folder: absent, or empty.", valueName: "dir")) var data: String
    @Option(help: ArgumentHelp("An empty PostgreSQL database, for a backup of a server that kept its catalog in one.", valueName: "postgres://user@host/db"))
    var database: String?

    func run() async throws {
        let manifest = try await ServerBackup.restore(from: source, dataPath: data, database: try ServerDatabase(database))
        if options.json { return try Output.json(manifest) }
        Output.line("restored the \(manifest.catalog) catalog of \(manifest.createdAt) and \(manifest.blobs) blob(s) into \(data)")
    }
}
