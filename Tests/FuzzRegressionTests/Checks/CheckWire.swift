import Foundation
import ReceiptWire

// Decodes the input as each JSON body the server and client accept, the way they do (a plain
// JSONDecoder), runs the server's checks on what decodes, and checks that what decodes encodes back
// to the same value.
public func checkWire(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { checkWire($0.baseAddress, $0.count) }
}

func checkWire(_ start: UnsafePointer<UInt8>?, _ count: Int) {
    guard let start, count > 0 else { return }
    let data = Data(bytes: start, count: count)
    if let receipt = wireRoundTrip(WireReceipt.self, data) { _ = receipt.validationError() }
    if let push = wireRoundTrip(WirePushRequest.self, data) {
        for record in push.records { _ = record.receipt?.validationError() }
    }
    _ = wireRoundTrip(WireRecord.self, data)
    _ = wireRoundTrip(WireWantRequest.self, data)
    _ = wireRoundTrip(WireWantResponse.self, data)
    _ = wireRoundTrip(WirePushResponse.self, data)
    _ = wireRoundTrip(WireChangesResponse.self, data)
    _ = wireRoundTrip(WireZoneList.self, data)
    _ = wireRoundTrip(WireShareList.self, data)
    _ = wireRoundTrip(WireShareRequest.self, data)
    _ = wireRoundTrip(WireAccount.self, data)
    _ = wireRoundTrip(WireError.self, data)
    _ = wireRoundTrip(WireText.self, data)?.validationError
    _ = wireRoundTrip(WireTextRequest.self, data)
    _ = wireRoundTrip(WireTextFetchResponse.self, data)
}

func wireRoundTrip<T: Codable & Equatable>(_ type: T.Type, _ data: Data) -> T? {
    guard let value = try? JSONDecoder().decode(type, from: data) else { return nil }
    guard let encoded = try? JSONEncoder().encode(value) else {
        preconditionFailure("\(type) decoded but does not encode")
    }
    guard let again = try? JSONDecoder().decode(type, from: encoded) else {
        preconditionFailure("\(type) encoded to JSON it cannot decode: \(String(decoding: encoded, as: UTF8.self))")
    }
    precondition(again == value, "\(type) changed in a round trip")
    return value
}
