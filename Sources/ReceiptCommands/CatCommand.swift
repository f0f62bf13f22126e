import ArgumentParser
import Foundation
import ReceiptVault
#if canImport(Glibc)
import Glibc
#endif

struct CatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Write a blob's original bytes to stdout.",
        discussion: "Fails (exit 1) if the bytes do not hash to SHA256; with --json, prints {sha256, size} instead of the bytes.")

    @OptionGroup var options: VaultOptions
    @Argument(help: ArgumentHelp("The blob's SHA-256.", valueName: "sha256")) var sha256: String

    struct Result: Encodable { let sha256: String; let size: Int64; let verified: Bool }

    func run() throws {
        let vault = try options.openVault()
        let record = try vault.blobRecord(sha256)
        if options.json {
            let size = try vault.readBlob(record) { _ in }
            return try Output.json(Result(sha256: record.sha256.hex, size: size, verified: true))
        }
        // A reader that stops early (`receipt cat … | head`) must not kill the process with SIGPIPE:
        // the write then fails with EPIPE and the command ends with one line and exit 1.
        signal(SIGPIPE, SIG_IGN)
        let out = FileDescriptorWriter(fd: 1)
        do {
            try vault.readBlob(record) { try out.write($0) }
        } catch is FileDescriptorWriter.Closed {
            throw ProblemsExit(message: "standard output was closed before all \(record.size) bytes of blob \(record.sha256) were written")
        }
    }
}

/// Writes to an inherited descriptor (stdout), retrying short writes and EINTR.
struct FileDescriptorWriter {
    let fd: Int32

    /// The reading end went away (EPIPE).
    struct Closed: Error {}

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { throw Closed() }
                throw VaultError(.io, "cannot write to standard output: \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }
}
