import BlobStore
import Foundation
import GRDB
import ReceiptCatalog
import ReceiptExportLayout

/// An error a user can act on: one sentence naming the file, line, receipt or blob concerned.
/// Every `VaultError` is raised before anything was changed, unless `kind` is `.partial`.
public struct VaultError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// Bad arguments or input: nothing was changed.
        case badInput
        /// Something named does not exist: nothing was changed.
        case notFound
        /// The vault cannot be used as it is (absent, unreadable, newer): nothing was changed.
        case unusableVault
        /// An operating-system or storage failure.
        case io
        /// A failure after part of the work was committed: the message says what was.
        case partial
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    static func bad(_ message: String) -> VaultError { VaultError(.badInput, message) }

    /// `error` as it reads once part of the work committed (`done` says what; nil: nothing did, and
    /// `error` is thrown as it is): its "nothing was changed" would no longer be true.
    static func partial(_ error: Error, done: String?) -> Error {
        guard let done else { return error }
        let wrapped = wrap(error)
        var message = (wrapped as? VaultError)?.message ?? "\(wrapped)"
        for claim in ["; nothing was changed", ": nothing was changed", "nothing was changed"] {
            message = message.replacingOccurrences(of: claim, with: "")
        }
        return VaultError(.partial, message + "; " + done)
    }
}

extension VaultError {
    /// Turns the errors of the layers below into one-sentence vault errors.
    public static func wrap(_ error: Error) -> Error {
        switch error {
        case let e as VaultError: return e
        case let e as CatalogError: return VaultError(.unusableVault, e.description)
        case let e as BlobError:
            if case .io(let io) = e { return VaultError(.io, io.description) }
            return VaultError(.io, e.description)
        case let e as PathError: return VaultError(.io, e.description)
        case let e as ExportError: return VaultError(.io, e.description)
        case let e as MissingExportBlob: return VaultError(.notFound, e.description)
        case let e as DatabaseError where e.isDamage:
            // A catalog that opened but turns out damaged further in.
            return VaultError(.unusableVault, "the catalog is damaged (\(e.message ?? "\(e.resultCode)")): "
                + "run `receipt fsck --repair` to recover the vault")
        case let e as RowDecodingError:
            // A row a door did not let in (a receipt id that is no UUID, written past the schema): fsck names it.
            let what = "\(e)".components(separatedBy: " - ").first ?? "\(e)"
            return VaultError(.unusableVault, "the catalog holds a damaged row (\(what)): run `receipt fsck` to find it")
        case let e as DatabaseError where e.resultCode == .SQLITE_READONLY:
            return VaultError(.io, "the catalog cannot be written: the vault is read-only (a read-only file system or "
                + "missing permissions); nothing was changed")
        case let e as DatabaseError where e.resultCode == .SQLITE_FULL:
            return VaultError(.io, "the disk holding the vault is full: the catalog cannot be written; nothing was changed")
        case let e as DatabaseError where e.resultCode == .SQLITE_IOERR:
            return VaultError(.io, "an I/O error occurred while using the catalog (\(e.message ?? "disk I/O error")); nothing was changed")
        default: return error
        }
    }
}

extension DatabaseError {
    /// SQLite found the file damaged (or not a database at all), as opposed to busy, full or read-only.
    var isDamage: Bool { resultCode == .SQLITE_CORRUPT || resultCode == .SQLITE_NOTADB }
}
