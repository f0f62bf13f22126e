import ArgumentParser
import BlobStore
import Foundation
import ReceiptInbox
import ReceiptVault

struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Import every file that appears in a folder, then move it to DIR/.imported/YYYY-MM/.",
        discussion: """
            Watches DIR and its sub-folders (names starting with '.' are skipped) and imports each regular \
            file once it is complete: no process holds it open for writing (as /proc shows them: for a user \
            other than root, that user's own processes) and its size, mtime and ctime have not changed for \
            --settle seconds. DIR is polled every --interval (so network file systems work); inotify wakes \
            it when a file is closed. A file read while its writer came back is not committed then, and is \
            judged again. Only after its receipt is committed is the file moved to DIR/.imported/YYYY-MM/ \
            (the month of the import, local time); a file whose bytes are already a receipt of the zone is \
            moved there too and reported as a duplicate; a file that cannot be read, or is empty once \
            settled, goes to DIR/.failed/ beside NAME.error (one line: why). A name already taken gets a \
            suffix (NAME-2.ext); nothing is overwritten. A DIR/.imported or DIR/.failed that is a symbolic \
            link is refused. Killed at any moment, no file is lost: it is still under DIR, or in .imported/ \
            with its receipt committed. The text of what was imported is then extracted, as import does \
            (--no-index skips it).
            Without --once it runs until SIGINT or SIGTERM, finishing the file in flight (exit 0). With \
            --once it handles what is there and exits: 0, or 1 when some file failed. Files changed within \
            the last --settle seconds are waited for (so --once takes at least that long); files their \
            writers hold open are left for the next run.
            Example: receipt watch ~/Scans --zone household --settle 10
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("The folder to watch.", valueName: "dir")) var dir: String
    @Option(help: "Zone to import into.") var zone: String = "personal"
    @Option(help: ArgumentHelp("Seconds between polls.", valueName: "seconds"))
    var interval: Double = 2
    @Option(help: ArgumentHelp("Seconds a file's size and times must stay unchanged, with no writer holding it open, "
                               + "before it is complete.", valueName: "seconds"))
    var settle: Double = 5
    @Flag(help: "Handle the files there now and exit (for cron and systemd timers).") var once = false
    @Flag(help: "Do not extract the text of what was imported (run `receipt index` later).") var noIndex = false
    @OptionGroup var text: TextOptions

    func validate() throws {
        guard interval.isFinite, interval >= 0.01, interval <= 86400 else {
            throw ValidationError("invalid interval '\(interval)': give seconds between 0.01 and 86400")
        }
        guard settle.isFinite, settle >= 0, settle <= 86400 else {
            throw ValidationError("invalid settle time '\(settle)': give seconds between 0 and 86400")
        }
        if options.json && !once { throw ValidationError("--json needs --once (one document when the run ends)") }
    }

    func run() throws {
        let vault = try options.openVault()
        let inbox = try Inbox(folder: dir, vault: vault, zone: zone, interval: interval, settle: settle)
        let stop = StopRequest()
        let display = WatchDisplay(dir: inbox.folder, json: options.json,
                                   announce: once ? nil : "watching \(inbox.folder) (polled every \(interval) s, "
                                       + "complete after \(settle) s unchanged); SIGINT or SIGTERM stops it after the file in flight")
        try inbox.run(once: once, stop: stop, report: display.add, waiting: display.waiting) {
            if !noIndex { display.indexImported(vault, options: text) }
            display.reportDuplicates(vault)
        }
        display.finish()
        if options.json { try Output.json(display.report) }
        if once && !display.report.failed.isEmpty { throw ExitCode(Failure.problems) }
    }
}

/// `--json`'s document: imported rows in import's shape, then duplicates and failures.
struct WatchReport: Encodable {
    struct Duplicate: Encodable {
        let path: String
        let sha256: String
    }

    struct Failed: Encodable {
        let path: String
        let error: String
    }

    var imported: [ImportedFile] = []
    var duplicates: [Duplicate] = []
    var failed: [Failed] = []
}

/// A line per file on stdout (unless --json), and a status line on stderr when it is a terminal.
final class WatchDisplay {
    private let dir: String
    private let json: Bool
    private let terminal = Output.stderrIsTerminal
    private var pending = 0
    /// Said once, on stderr, when the first poll is done and inotify is set up.
    private var announce: String?
    private(set) var report = WatchReport()
    /// Blobs of the receipts imported since the last extraction of their text.
    private var unindexed: Set<String> = []
    /// Receipts imported since their possible duplicates were last looked for.
    private var unchecked: Set<ReceiptID> = []

    init(dir: String, json: Bool, announce: String?) {
        self.dir = dir
        self.json = json
        self.announce = announce
    }

    func add(_ outcome: InboxOutcome) {
        let path = shown(outcome.path)
        let moved = outcome.movedTo.map { " -> " + shown($0) } ?? " (left in place: it changed while being imported)"
        let line: String
        switch outcome.result {
        case .imported(let item):
            report.imported.append(item)
            unindexed.insert(item.sha256)
            unchecked.insert(item.id)
            line = "imported   \(item.id.short)  \(path)\(moved)"
        case .duplicate(let sha256, let receipt):
            report.duplicates.append(.init(path: outcome.path, sha256: sha256))
            line = "duplicate  \(receipt.short)  \(path)\(outcome.movedTo.map { " -> " + shown($0) } ?? "")"
        case .failed(let error):
            report.failed.append(.init(path: outcome.path, error: error))
            line = "failed     \(path): \(error)\(outcome.movedTo.map { " -> " + shown($0) } ?? "")"
        }
        if !json {
            clear()
            Output.line(line)
        }
        status()
    }

    func waiting(_ count: Int) {
        pending = count
        if let text = announce, !terminal {
            Output.note("receipt: " + text)
            announce = nil
        }
        status()
    }

    /// Extracts the text of what was imported, as import does: a failure here never stops the watch.
    func indexImported(_ vault: Vault, options: TextOptions) {
        guard !unindexed.isEmpty else { return }
        clear()
        do {
            try TextIndexing.run(vault, only: unindexed, options: options)
            unindexed = []
        } catch {
            Output.note("receipt: the files are imported, but their text was not indexed (\(Failure.describe(error).message)): "
                + "run `receipt index`")
        }
        status()
    }

    /// The new receipts that may duplicate others (once their text is read), reported as `import` does.
    func reportDuplicates(_ vault: Vault) {
        let found = ImportCommand.possibleDuplicates(of: unchecked, vault)
        unchecked = []
        guard !found.isEmpty else { return }
        for i in report.imported.indices.reversed() {
            if let others = found[report.imported[i].id] { report.imported[i].possibleDuplicateOf = others }
        }
        if !json {
            clear()
            ImportCommand.printDuplicates(found)
        }
        status()
    }

    func finish() {
        clear()
        if !json {
            Output.note("watch: \(report.imported.count) imported, \(report.duplicates.count) duplicate(s), "
                + "\(report.failed.count) failed" + (pending > 0 ? ", \(pending) left (still being written)" : ""))
        }
    }

    /// A path inside the watched folder, relative to it.
    private func shown(_ path: String) -> String {
        path.hasPrefix(dir + "/") ? String(path.dropFirst(dir.count + 1)) : path
    }

    private func status() {
        guard terminal else { return }
        let text = "\rwatching \(dir): \(report.imported.count) imported, \(report.duplicates.count) duplicate(s), "
            + "\(report.failed.count) failed, \(pending) waiting to be complete \u{1B}[K"
        FileHandle.standardError.write(Data(text.utf8))
    }

    private func clear() {
        if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
