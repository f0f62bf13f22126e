import BlobStore
import Foundation
import ZIPFoundation

extension ExportLayout {
    /// A zip with no entries (its end of central directory record alone): ZIPFoundation then opens the
    /// file this export created instead of creating one itself.
    static let emptyZip: [UInt8] = [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18)

    /// An export as a zip (the layout of `purpose`: `exportItems`, then `closingFiles`) written into
    /// `zipFile`, an empty file open for reading and writing; `export --zip` and the web view's
    /// download (`GET /z/OWNER/ZONE/download`) both write theirs here. `copy` puts an attachment's
    /// original bytes into a new scratch file made in `scratch`, throwing `BlobError` (or
    /// `MissingExportBlob`) for a blob that is missing or does not verify: that file is then left
    /// out and reported, and a corrupt blob never reaches the zip. One attachment at a time is held,
    /// on disk: memory does not grow with the export. `destination` names the zip in messages.
    public static func writeZip(_ receipts: [ReceiptView], items: [ExportItem], purpose: ExportPurpose, into zipFile: FileDescriptor,
                                scratch: ExportFolder, destination: String,
                                copy: (_ sha256: String, _ into: FileDescriptor) throws -> Void,
                                written: (ExportItem) -> Void = { _ in }) throws -> [ExportFailure] {
        try zipFile.write(emptyZip)
        var failures: [ExportFailure] = []
        let archive: Archive
        do {
            // ZIPFoundation opens files by path: this one opens the caller's file again, wherever its
            // folder may have gone since. Its own handle is released before this returns.
            archive = try Archive(url: URL(fileURLWithPath: "/proc/self/fd/\(zipFile.raw)"), accessMode: .update)
        } catch {
            throw ExportError("cannot create the zip file \(destination): \(error)")
        }
        for (index, item) in items.enumerated() {
            if let failure = try addVerifiedEntry(archive, item, scratch: scratch, name: String(index), destination: destination,
                                                  copy: copy) {
                failures.append(failure)
                continue
            }
            written(item)
        }
        for (name, data) in try closingFiles(receipts, items: items, failures: failures, purpose: purpose) {
            try addZipEntry(archive, name, size: Int64(data.count), mediaType: true, destination: destination) { position, size in
                let start = Int(position)
                return data.subdata(in: start..<min(start + size, data.count))
            }
        }
        return failures
    }

    /// One attachment into the zip: its verified bytes go to a scratch file first, so a corrupt blob
    /// never reaches the zip. Returns the failure of a blob that is missing or does not verify.
    private static func addVerifiedEntry(_ archive: Archive, _ item: ExportItem, scratch: ExportFolder, name: String,
                                         destination: String,
                                         copy: (String, FileDescriptor) throws -> Void) throws -> ExportFailure? {
        let scratchFile = try scratch.makeFile(name, readable: true)
        defer {
            scratchFile.close()
            scratch.remove(name)
        }
        do {
            try copy(item.sha256, scratchFile)
        } catch let error as BlobError {
            return ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.description)
        } catch let error as MissingExportBlob {
            return ExportFailure(receipt: item.receipt, sha256: item.sha256, error: error.description)
        }
        try addZipEntry(archive, item.name, size: item.size, mediaType: compressible(item.name),
                        destination: destination) { position, size in
            var data = Data(count: size)
            let n = try data.withUnsafeMutableBytes { try scratchFile.read(into: $0, at: position) }
            if n < size { data.removeLast(size - n) }
            return data
        }
        return nil
    }

    private static func addZipEntry(_ archive: Archive, _ name: String, size: Int64, mediaType compress: Bool, destination: String,
                             provider: (Int64, Int) throws -> Data) throws {
        do {
            // Owner-only once unzipped, as the export's own files.
            try archive.addEntry(with: name, type: .file, uncompressedSize: size, permissions: 0o600,
                                 compressionMethod: compress ? .deflate : .none, provider: provider)
        } catch let error as PathError {
            throw error
        } catch {
            throw ExportError("cannot write \(name) into the zip file \(destination): \(error)")
        }
    }
}
