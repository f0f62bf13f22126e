import ArgumentParser
import Foundation
import ReceiptServer
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

/// `receipt server passwd NAME` and `receipt server sessions-revoke NAME`: the web view's sign-in.

struct ServerPasswdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Set an account's password for the web view: asked on the terminal (twice), or read from stdin's first line when stdin is not a terminal. Ends the account's open web sessions.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @OptionGroup var storage: ServerDataOptions

    struct Result: Encodable { let account: String; let passwordSet: Bool }

    func run() async throws {
        let password: String
        if isatty(0) == 1 {
            let first = try Self.readHidden("Password for \(name): ")
            guard try Self.readHidden("Again: ") == first else {
                throw VaultError(.badInput, "the two passwords differ: nothing was changed")
            }
            password = first
        } else {
            guard let line = readLine(strippingNewline: true) else {
                throw VaultError(.badInput, "no password on stdin: give it as the first line")
            }
            password = line
        }
        try await storage.open { catalog in
            try await catalog.setPassword(account: name, password: password)
        }
        if options.json { return try Output.json(Result(account: name, passwordSet: true)) }
        Output.note("set the web password of \(name) (its open web sessions were ended)")
    }

    /// One line from the terminal with echo turned off.
    static func readHidden(_ prompt: String) throws -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var saved = termios()
        let canHide = tcgetattr(0, &saved) == 0
        if canHide {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if canHide { _ = tcsetattr(0, TCSAFLUSH, &saved) }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else {
            throw VaultError(.badInput, "no password was entered: nothing was changed")
        }
        return line
    }
}

struct ServerSessionsRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions-revoke",
        abstract: "End every web session of an account (its browsers must sign in again at their next request).")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The account.", valueName: "name")) var name: String
    @OptionGroup var storage: ServerDataOptions

    struct Result: Encodable { let account: String; let revokedSessions: Int }

    func run() async throws {
        let count = try await storage.open { catalog in
            try await catalog.revokeSessions(account: name)
        }
        if options.json { return try Output.json(Result(account: name, revokedSessions: count)) }
        Output.note("ended \(count) web session(s) of \(name)")
    }
}
