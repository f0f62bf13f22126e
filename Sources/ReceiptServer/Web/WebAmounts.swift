import Foundation

/// Amounts as a person reads them on a page: the currency's minor units (ISO 4217), thousands
/// separators, the code after the number ("1,004.00 EUR", "26.50 USD", "1,200 JPY"). Display only:
/// what is stored and synced stays the amount as it was typed, so a total with more decimals than its
/// currency has keeps them all.
enum WebAmounts {
    /// ISO 4217's currencies whose minor unit is not 2 (Foundation on Linux does not know them).
    static let minorUnits: [String: Int] = [
        "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0,
        "RWF": 0, "UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
        "BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3, "CLF": 4, "UYW": 4,
    ]

    static func display(_ total: String?, currency: String?) -> String {
        guard let total else { return "" }
        guard let amount = Decimal(string: total, locale: Locale(identifier: "en_US_POSIX")) else {
            return [total, currency].compactMap { $0 }.joined(separator: " ")
        }
        return display(amount, typedDecimals: decimals(of: total), currency: currency)
    }

    static func display(_ amount: Decimal, typedDecimals: Int = 0, currency: String?) -> String {
        let digits = max(currency.flatMap { minorUnits[$0] } ?? 2, typedDecimals)
        let formatter = NumberFormatter()
        formatter.locale = Locale(identifier: "en_US")
        formatter.numberStyle = .decimal
        formatter.minimumFractionDigits = digits
        formatter.maximumFractionDigits = digits
        let number = formatter.string(from: amount as NSDecimalNumber) ?? "\(amount)"
        return currency.map { "\(number) \($0)" } ?? number
    }

    /// The digits after the point of an amount as typed ("12.3456" has 4).
    static func decimals(of total: String) -> Int {
        guard let point = total.firstIndex(of: ".") else { return 0 }
        return total.distance(from: point, to: total.endIndex) - 1
    }
}
