import ArgumentParser
import BlobStore
import Foundation
import ReceiptCatalog
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// Flags every command takes, before or after the subcommand name.
public struct VaultOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The vault folder.", valueName: "path"))
    public var vault: String?

    @Flag(name: .long, help: "Print one JSON document on stdout.")
    public var json = false

    public init() {}

    /// --vault, else $RECEIPT_VAULT, else $XDG_DATA_HOME/receipt, else ~/.local/share/receipt.
    public var vaultPath: String {
        let env = ProcessInfo.processInfo.environment
        if let vault, !vault.isEmpty { return vault }
        if let v = env["RECEIPT_VAULT"], !v.isEmpty { return v }
        if let xdg = env["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/receipt" }
        return (env["HOME"] ?? NSHomeDirectory()) + "/.local/share/receipt"
    }

    public func openVault() throws -> Vault {
        try opening { try Vault.open(at: vaultPath, upgrading: $0) }
    }

    /// For a command that only reads the catalog (see `Catalog.Access.reading`).
    public func openVaultForReading() throws -> Vault {
        try opening { try Vault.open(at: vaultPath, access: .reading, upgrading: $0) }
    }

    /// Opens through `open`, saying so when it upgrades the catalog: a million receipts' upgrade runs
    /// for minutes, and leaves their texts to be read again by the next `index`.
    private func opening(_ open: (_ upgrading: (Int, Int) -> Void) throws -> Vault) throws -> Vault {
        SQLiteTemporaryFiles.keep(in: vaultPath)
        var started: Date?
        let vault = try open { from, to in
            Output.note("upgrading the catalog from schema version \(from) to \(to) "
                + "(a large vault takes minutes: a million receipts about 12)")
            started = Date()
        }
        guard let started else { return vault }
        let copy = CatalogCopy.beforeMigrationPath(FileSystem.join(vaultPath, Catalog.fileName), version: Catalog.schemaVersion)
        let pending = (try? vault.stats().pendingIndex) ?? 0
        Output.note("upgraded the catalog in \(Int(Date().timeIntervalSince(started).rounded())) s"
            + (FileSystem.exists(copy) ? "; the old one is kept as \(copy) until `receipt fsck` passes" : "")
            + (pending == 0 ? "" : "; \(pending) file(s) wait for `receipt index` to read their text (texts an older "
                + "extractor read are read again, and stay searchable until then)"))
        return vault
    }

}

/// The umask the process started with (`ReceiptCommand.run` sets 077 for everything else).
nonisolated(unsafe) var userUmask: mode_t = 0o022

/// How an error ends the process: one sentence and an exit status.
struct Failure {
    let message: String
    let status: Int32

    /// Exit 2: nothing was changed (bad input, unusable vault, not found).
    static let unchanged: Int32 = 2
    /// Exit 1: the command ran and found or left problems.
    static let problems: Int32 = 1

    static func describe(_ error: Error) -> Failure {
        // A blob that is missing or does not verify is a problem found (exit 1), not bad input.
        if let e = error as? BlobError {
            if case .io = e {} else { return Failure(message: e.description, status: problems) }
        }
        switch VaultError.wrap(error) {
        case let e as ManifestError:
            // One line per bad row; `main` prefixes the first one.
            return Failure(message: e.lines.joined(separator: "\nreceipt: "), status: unchanged)
        case let e as ProblemsExit: return Failure(message: e.message, status: problems)
        case let e as VaultError: return Failure(message: e.message, status: e.kind == .partial ? problems : unchanged)
        case let e as BlobError: return Failure(message: e.description, status: problems)
        case let e: return Failure(message: String(describing: e), status: unchanged)
        }
    }
}

/// Thrown after output was rendered, when the command ran but left problems (exit 1).
struct ProblemsExit: Error {
    let message: String
}

enum Output {
    static func json<T: Encodable>(_ value: T) throws {
        var data = try jsonEncoder().encode(value)
        data.append(0x0A)
        FileHandle.standardOutput.write(data)
    }

    /// The encoder of every JSON output.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Text as it is (the caller ends its lines), to stdout.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func note(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// Standard output gathered into 64 KiB writes: a list of 14,000 receipts written a line per
/// `write(2)` spent more time in the kernel than in the catalog. The owner calls `flush()` at the end.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private let limit = 64 * 1024

    init() { buffer.reserveCapacity(limit + 4096) }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= limit { flush() }
    }

    func line(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(0x0A)
        if buffer.count >= limit { flush() }
    }

    /// One element of a JSON array written as it comes (`Output.json` of the whole array's layout:
    /// two spaces more at each line), opening the array at the first; `endJSONArray` closes it.
    func jsonElement<T: Encodable>(_ value: T, first: Bool, encoder: JSONEncoder) throws {
        let data = try encoder.encode(value)
        buffer.append(contentsOf: first ? Array("[\n  ".utf8) : Array(",\n  ".utf8))
        // A string in JSON never holds a raw line feed, so each one ends a line of the layout.
        for byte in data {
            buffer.append(byte)
            if byte == 0x0A { buffer.append(contentsOf: [0x20, 0x20]) }
        }
        if buffer.count >= limit { flush() }
    }

    func endJSONArray(empty: Bool) {
        write(empty ? "[]\n" : "\n]\n")
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Progress on stderr, only when stderr is a terminal: files, bytes, rate and time left.
final class ProgressLine: @unchecked Sendable {
    private let label: String
    private let start = Date()
    private var lastDraw = Date.distantPast
    private let enabled: Bool

    init(_ label: String) {
        self.label = label
        enabled = Output.stderrIsTerminal
    }

    func update(files: Int, of totalFiles: Int, bytes: Int64, of totalBytes: Int64) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(lastDraw) > 0.1 || files == totalFiles else { return }
        lastDraw = now
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let rate = Double(bytes) / elapsed
        let left = rate > 0 ? Double(totalBytes - bytes) / rate : 0
        let text = String(format: "\r%@ %d/%d files, %@/%@, %@/s, %@ left ", label, files, totalFiles,
                          ByteCount.text(bytes), ByteCount.text(totalBytes), ByteCount.text(Int64(rate)), Format.duration(left))
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// A phase whose total is not known yet (items and bytes so far, rate).
    func update(label phase: String, items: Int, bytes: Int64) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(lastDraw) > 0.1 else { return }
        lastDraw = now
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let text = String(format: "\r%@ %d rows, %@, %@/s \u{1B}[K", phase, items, ByteCount.text(bytes),
                          ByteCount.text(Int64(Double(bytes) / elapsed)))
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Items of a known total (no bytes): count, rate and time left.
    func update(label phase: String, items: Int, of total: Int) {
        guard enabled else { return }
        let now = Date()
        guard now.timeIntervalSince(lastDraw) > 0.1 || items == total else { return }
        lastDraw = now
        let rate = Double(items) / max(now.timeIntervalSince(start), 0.001)
        let left = rate > 0 ? Double(total - items) / rate : 0
        let text = String(format: "\r%@ %d/%d files, %.1f/s, %@ left \u{1B}[K", phase, items, total, rate, Format.duration(left))
        FileHandle.standardError.write(Data(text.utf8))
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

enum Format {
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 60 ? "\(s / 60)m\(String(format: "%02d", s % 60))s" : "\(s)s"
    }
}
