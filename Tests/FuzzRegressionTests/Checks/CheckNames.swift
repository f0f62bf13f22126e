import BlobStore
import ReceiptVault
import ReceiptWire

// The validators of names, paths and values a user or a peer supplies: each either accepts or throws
// one error; what they accept keeps the properties the catalog and the server rely on.
public func checkNames(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { checkNames($0.baseAddress, $0.count) }
}

func checkNames(_ start: UnsafePointer<UInt8>?, _ count: Int) {
    guard let start else { return }
    let text = String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)

    if let zone = try? Validate.zoneName(text) {
        precondition(zone == text && !zone.isEmpty && zone.split(separator: "/").count <= 2)
        // The vault accepts exactly the names its server accepts.
        precondition(zone.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { WireName.isValid(String($0)) })
    }
    if WireName.isValid(text) {
        precondition(text.utf8.count <= 64 && !text.contains("/") && !text.hasPrefix("."))
    }
    if WireName.isValidBlobAddress(text) {
        guard let id = BlobID(hex: text) else { preconditionFailure("valid blob address without a BlobID") }
        precondition(id.description == text)
    }
    _ = WireName.isValidRecordID(text)
    if let day = try? Validate.date(text) {
        precondition(day.utf8.count == 10)
    }
    if let total = try? Validate.total(text) {
        // The canonical form is a fixed point: storing it and reading it back changes nothing.
        precondition((try? Validate.total(total)) == total, "total '\(text)' -> '\(total)' is not canonical")
    }
    if let code = try? Validate.currency(text) { precondition(code.utf8.count == 3) }
    _ = try? Validate.status(text)
    if let value = try? Validate.text(text, field: "tag") {
        precondition(!value.utf8.contains(0) && !value.contains(";"))
    }
}
