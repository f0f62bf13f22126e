import BlobStore
import Foundation
import ReceiptExportLayout
#if canImport(Glibc)
import Glibc
#endif

/// The file a download is sent from (WebDownload.swift), open, with no name left: closed (and so
/// freed) when the last holder lets go of it, the response that was never sent included. Apart from
/// WebDownload.swift, where NIO's `FileDescriptor` would be taken for BlobStore's.
final class WebDownloadFile: Sendable {
    static let folderName = "downloads"
    let fd: FileDescriptor
    let size: Int64

    private init(_ fd: FileDescriptor) throws {
        self.fd = fd
        do {
            size = try fd.stat().size
        } catch {
            fd.close()
            throw error
        }
    }

    deinit { fd.close() }

    /// `write` on a thread of its own: a download of thousands of files must not hold one of the
    /// few threads every request of the server shares.
    static func make(_ receipts: [ReceiptView], purpose: ExportPurpose, store: BlobStore,
                     named zipName: String) async throws -> WebDownloadFile {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try WebDownloadFile(write(receipts, purpose: purpose, store: store, named: zipName)) })
            }
        }
    }

    /// The zip, written in a folder of its own under `DATA/downloads/` (0700) whose names are
    /// removed before it is returned: the open file is all that is left, and closing it frees it.
    static func write(_ receipts: [ReceiptView], purpose: ExportPurpose, store: BlobStore,
                      named zipName: String) throws -> FileDescriptor {
        let downloads = FileSystem.join(store.root, folderName)
        do {
            try FileSystem.makeDirectories(downloads, mode: 0o700)
            let parent = try ExportFolder.open(downloads)
            let workName = SecureRandom.hex(8)
            let work = try parent.makeFolder(workName)
            defer { parent.remove(workName, isFolder: true) }
            let zip = try work.makeFile("download.zip", readable: true)
            work.remove("download.zip")
            do {
                // The server's blobs are stored as sent (identity); copying verifies them.
                _ = try ExportLayout.writeZip(receipts, items: ExportLayout.exportItems(receipts, for: purpose), purpose: purpose, into: zip,
                                       scratch: work, destination: zipName) { sha256, out in
                    guard let id = BlobID(hex: sha256) else { throw MissingExportBlob("no blob \(sha256.prefix(64))") }
                    try store.copy(id, encoding: .identity, into: out, removeOnFailure: false)
                }
                return zip
            } catch {
                zip.close()
                throw error
            }
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(.failed, "the download \(zipName) could not be written on the server: \(error)")
        }
    }
}
