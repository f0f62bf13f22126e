import Foundation
@testable import ReceiptVault

// The import manifest (CSV) as a user hands it to `receipt import --manifest`: written to a file,
// opened with ManifestReader, read to the end, each row's fields through the validators. A bad
// manifest is an error naming the file and line, never a crash.
// (@testable: ManifestReader is internal; tools/fuzz builds with -enable-testing.)
public func checkManifest(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { checkManifest($0.baseAddress, $0.count) }
}

func checkManifest(_ start: UnsafePointer<UInt8>?, _ count: Int) {
    guard let start else { return }
    let path = NSTemporaryDirectory() + "receipt-fuzz-manifest-\(getpid()).csv"
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes: start, count: count)) else {
        preconditionFailure("cannot write \(path)")
    }
    defer { unlink(path) }
    do {
        let reader = try ManifestReader(path: path)
        var rows = 0
        while let row = try reader.next(), rows < 10_000 {
            rows += 1
            guard case .success(let record) = row else { continue }
            precondition(record.line >= 2)
            for column in ManifestColumn.allCases {
                guard let value = record[column] else { continue }
                _ = try? Validate.text(value, field: column.rawValue)
                switch column {
                case .date: _ = try? Validate.date(value)
                case .total: _ = try? Validate.total(value)
                case .currency: _ = try? Validate.currency(value)
                case .status: _ = try? Validate.status(value)
                case .zone: _ = try? Validate.zoneName(value)
                default: break
                }
            }
        }
    } catch is VaultError {
    } catch is ManifestError {
    } catch {
        preconditionFailure("unexpected error \(error)")
    }
}
