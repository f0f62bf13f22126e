import ReceiptWire

/// Why a value a browser sent (a query, a form field, a multipart header) cannot be one of its kind:
/// one sentence naming it. The routes answer it with a 400 (`ServerError.checking`, ReceiptServer).
public struct WebFormError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum WebForm {
    /// A date of the list's filters or a form, by the one rule of every door (`ReceiptFields.date`).
    public static func date(_ text: String, _ what: String) throws -> String {
        do {
            return try ReceiptFields.date(text)
        } catch let error as FieldError {
            throw WebFormError("the \(what) date: \(error.description)")
        }
    }
}
