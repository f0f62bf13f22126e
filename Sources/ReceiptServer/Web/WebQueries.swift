import BlobStore
import Foundation
import ReceiptWire
import WebForms

struct WebReceiptRow: Sendable {
    let id: String
    let changeTag: String
    let receipt: WireReceipt
}

struct WebZonePage: Sendable {
    let zone: VisibleZone
    let receipts: [WebReceiptRow]
    let matching: Int
    /// Exact sums per currency of the matching receipts that have a total.
    let totals: [(currency: String, total: Decimal, count: Int)]
}
