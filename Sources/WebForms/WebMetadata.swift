import Foundation
import ReceiptWire

/// The metadata fields of the upload and edit forms, checked by the rules `receipt import` uses
/// (`ReceiptFields`); an empty field is an absent value. Free text is kept as typed, blanks around it
/// included, as the command line and a push keep it (so a save without a change changes nothing).
public struct WebMetadata {
    public var merchant, date, total, currency, category, note: String?

    public init(_ fields: [String: String]) throws {
        func value(_ key: String, _ rule: (String) throws -> String) throws -> String? {
            // A browser sends a textarea's line breaks as CRLF whatever it was given: stored as the
            // LF the command line and the form's page use, so a save without a change changes nothing.
            guard let text = fields[key]?.replacingOccurrences(of: "\r\n", with: "\n"), !text.isEmpty else { return nil }
            do { return try rule(text) } catch let error as FieldError { throw WebFormError(error.description) }
        }
        merchant = try value("merchant") { try ReceiptFields.text($0, field: "merchant") }
        date = try value("date", ReceiptFields.date)
        total = try value("total", ReceiptFields.total)
        currency = try value("currency", ReceiptFields.currency)
        category = try value("category") { try ReceiptFields.text($0, field: "category") }
        note = try value("note") { try ReceiptFields.text($0, field: "note") }
    }

    public func receipt(attachments: [WireAttachment], tags: [String], createdAt: Int64, modifiedAt: Int64) -> WireReceipt {
        WireReceipt(merchant: merchant, date: date, total: total, currency: currency, category: category, note: note,
                    tags: tags, attachments: attachments, createdAt: createdAt, modifiedAt: modifiedAt)
    }
}
