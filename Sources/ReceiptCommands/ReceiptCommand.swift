import ArgumentParser
import Foundation
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// The root command: dispatches only. Each subcommand parses, calls one library function, renders.
public struct ReceiptCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "receipt",
        abstract: "A content-addressed store for receipts and their attachments.",
        discussion: """
            The vault is --vault PATH, else $RECEIPT_VAULT, else $XDG_DATA_HOME/receipt, else \
            ~/.local/share/receipt. Exit status: 0 success; 1 the command ran and found or left \
            problems; any other non-zero: nothing was changed.
            """,
        subcommands: [
            InitCommand.self, ImportCommand.self, ListCommand.self, ShowCommand.self, EditCommand.self,
            RemoveCommand.self, AttachCommand.self, DetachCommand.self, CatCommand.self, StatsCommand.self, ExportCommand.self,
            ServerCommand.self, RemoteCommand.self, ZoneCommand.self, ShareCommand.self, UnshareCommand.self, SyncCommand.self, WipeCommand.self,
            GCCommand.self, FsckCommand.self, WatchCommand.self, IndexCommand.self, SearchCommand.self, ReportCommand.self,
            ReviewCommand.self, ConfigCommand.self, DupsCommand.self,
        ]
    )

    @OptionGroup public var options: VaultOptions
    @Flag(name: .long, help: "Print the version and the commit it was built from.") var version = false

    public init() {}

    /// `receipt --version`; without it (and without a subcommand), the help.
    public func run() async throws {
        guard version else { throw CleanExit.helpRequest(self) }
        try BuildInfo.print(json: options.json)
    }

    /// Parses and runs; every failure becomes one line on stderr and a meaningful exit status.
    public static func run(arguments: [String]? = nil) async {
        // Private by default: whatever this process creates in a vault or a server's data folder
        // (SQLite's files, staging files, folders) is its owner's alone. `export` restores the
        // user's own umask for the copies it writes.
        userUmask = umask(0o077)
        VaultLock.waiting.withLock {
            $0 = { vault in
                FileHandle.standardError.write(Data("receipt: another receipt command is using the vault \(vault); waiting for it to finish\n".utf8))
            }
        }
        var command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            exit(withParseError: error)
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ExitCode {
            Glibc.exit(error.rawValue)
        } catch let error as CleanExit {
            self.exit(withError: error)
        } catch let error as ValidationError {
            exit(withParseError: error)
        } catch {
            // `receipt help CMD` and `CMD --help` run a help command that throws ArgumentParser's own
            // help request: print the help (stdout, exit 0), not an error.
            if exitCode(for: error) == .success { self.exit(withError: error) }
            let failure = Failure.describe(error)
            FileHandle.standardError.write(Data(("receipt: " + failure.message + "\n").utf8))
            Glibc.exit(failure.status)
        }
    }

    /// Help and version as ArgumentParser renders them; argument errors on one line.
    static func exit(withParseError error: Error) -> Never {
        let status = exitCode(for: error)
        if status == .success { self.exit(withError: error) }
        let text = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
        FileHandle.standardError.write(Data(("receipt: " + text + " (see `receipt --help`)\n").utf8))
        Glibc.exit(status.rawValue)
    }
}
