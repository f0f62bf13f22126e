import Glibc

/// Finds the amount a receipt says was paid: the amount of a TOTAL / AMOUNT DUE / TOTAL TTC / SUMME …
/// line (or of the line under a label that stands alone), how sure the receipt makes it, and its tax.
enum TotalFinder {
    /// Labels of the amount paid, strongest first. A line is matched on its letters only, so `TOTAL:`,
    /// `TOTAL (RM)` and `T O T A L` all read `TOTAL`.
    static let totalLabels: [(label: String, weight: Double)] = [
        ("GRANDTOTAL", 1.0), ("AMOUNTDUE", 1.0), ("BALANCEDUE", 1.0), ("TOTALDUE", 1.0), ("TOTALTOPAY", 1.0),
        ("TOTALTTC", 1.0), ("TOTALROUNDED", 1.0), ("ROUNDEDTOTAL", 1.0), ("ROUNDTOTAL", 0.95), ("NETTTOTAL", 1.0),
        ("NETTOTAL", 1.0), ("TOTALAFTERADJ", 1.0), ("TOTALINCL", 0.95), ("TOTALAMOUNT", 0.95), ("TOTALSALES", 0.9),
        ("TOTALPAYABLE", 1.0), ("AMOUNTPAYABLE", 1.0), ("ZUZAHLEN", 1.0), ("SUMMEEUR", 1.0), ("GESAMTBETRAG", 1.0),
        ("GESAMTSUMME", 1.0), ("SUMME", 0.95), ("GESAMT", 0.9), ("APAYER", 1.0), ("MONTANTTTC", 1.0), ("NETAPAYER", 1.0),
        ("TOTALE", 0.9), ("IMPORTE", 0.8), ("TOTAL", 0.85), ("AMOUNT", 0.5), ("JUMLAH", 0.8), ("BETRAG", 0.7),
    ]

    /// Lines that name another sum: never the amount paid, even when they contain TOTAL.
    static let otherSums = [
        "SUBTOTAL", "SUBTTL", "TOTALQTY", "TOTALQUANTITY", "TOTALITEM", "ITEMS", "QTY", "TOTALTAX", "TOTALGST", "TOTALVAT",
        "TOTALDISCOUNT", "DISCOUNT", "SAVING", "SAVED", "TOTALEXCL", "EXCLGST", "EXCLUSIVE", "NETTO", "ZWISCHENSUMME",
        "SOUSTOTAL", "TOTALHT", "CHANGE", "CASH", "TENDER", "RECEIVED", "PAID", "GSTSUMMARY", "TAXSUMMARY", "RENDU",
        "RÜCKGELD", "RUCKGELD", "GEGEBEN", "POINTS", "MWST", "TVA", "VAT", "GST", "TAX", "ROUNDINGADJ", "ROUNDING", "DEPOSIT",
        "TIP",
    ]

    struct Candidate {
        var amount: PrintedAmount
        var line: String
        var weight: Double
    }

    /// The amount paid, with a confidence 0–1, or nil when no line names it.
    static func find(lines: [String]) -> (amount: PrintedAmount, confidence: Double, line: String)? {
        let letters = lines.map(lettersOnly)
        var candidates: [Candidate] = []
        // A tax summary's table (GST SUMMARY … TOTAL 4.60 0.28) sums the tax, not the receipt: its rows are no total.
        let summary = letters.firstIndex { $0.includes("SUMMARY") || $0.includes("ZUSAMMENFASSUNG") } ?? lines.count
        for (index, line) in lines.enumerated().prefix(summary) {
            guard let weight = labelWeight(letters[index]) else { continue }
            if let amount = AmountScanner.amounts(in: line).last(where: { $0.cents > 0 }) {
                candidates.append(Candidate(amount: amount, line: line, weight: weight))
            } else if let next = nextAmount(lines, letters, after: index) {
                // A label alone on its line, its amount on the next ones (a two-column print read a row at a time).
                candidates.append(Candidate(amount: next.amount, line: line + " " + next.line, weight: weight * 0.9))
            }
        }
        guard let best = candidates.max(by: { $0.weight < $1.weight }) else { return nil }
        let agreeing = candidates.filter { $0.amount.cents == best.amount.cents }
        let disagreeing = candidates.filter { $0.amount.cents != best.amount.cents && $0.weight >= best.weight }
        var confidence = best.weight * 0.8
        if agreeing.count > 1 { confidence += 0.1 }
        if largestConfirms(best.amount.cents, lines: lines, letters: letters) { confidence += 0.05 }
        // Arithmetic the receipt prints that comes out at this amount: a misread amount almost never does.
        let bestLine = lines.firstIndex { best.line.hasPrefix($0) } ?? lines.count
        if best.weight >= 0.85, paymentConfirms(best.amount.cents, lines: lines, letters: letters)
            || sumConfirms(best.amount.cents, lines: lines, letters: letters)
            || itemsConfirm(best.amount.cents, lines: Array(lines[..<bestLine]), letters: Array(letters[..<bestLine]))
            || printedAgain(best.amount.cents, besides: bestLine, lines: Array(lines[..<summary]), letters: letters) {
            confidence = max(confidence + 0.15, 0.92)
        }
        if !disagreeing.isEmpty { confidence -= 0.3 }
        // One cash and one change line that do not come out at it: one of the three is misread (on
        // SROIE's prints, the total more often than not: 34.00 items read from 31.00, cash 101 less 70).
        if paymentContradicts(best.amount.cents, lines: lines, letters: letters) { confidence = min(confidence, 0.8) }
        return (best.amount, max(0, min(1, confidence)), best.line)
    }

    /// Lines that say how the total was paid.
    static let paymentLabels = ["VISA", "MASTER", "CARD", "DEBIT", "CREDIT", "AMEX", "PAYMENT", "CASH", "TENDER", "PAID", "EFTPOS"]

    /// Another line names this amount as the total (a rounded, gross or nett total) or as what paid it
    /// (the card, the exact cash): two prints of one amount are seldom misread alike.
    static func printedAgain(_ total: Int64, besides index: Int, lines: [String], letters: [String]) -> Bool {
        lines.indices.contains { i in
            i != index && (labelWeight(letters[i]) != nil || paymentLabels.contains { letters[i].includes($0) })
                && AmountScanner.amounts(in: lines[i]).contains { $0.cents == total }
        }
    }

    /// The items above the total line add up to it (the last amount of each line that names no sum).
    static func itemsConfirm(_ total: Int64, lines: [String], letters: [String]) -> Bool {
        var sum: Int64 = 0
        var count = 0
        for (line, letters) in zip(lines, letters) {
            guard labelWeight(letters) == nil, !["TOTAL", "CASH", "CHANGE", "TENDER", "PAID", "CARD", "VISA"]
                .contains(where: { letters.includes($0) }), let amount = AmountScanner.amounts(in: line).last else { continue }
            sum += amount.cents
            count += 1
        }
        return count >= 1 && sum == total
    }

    static func labelWeight(_ letters: String) -> Double? {
        guard !otherSums.contains(where: { letters.includes($0) }) || strongLabel(letters) else { return nil }
        return totalLabels.first(where: { letters.includes($0.label) })?.weight
    }

    /// `TOTAL INCL GST` or `ROUNDED TOTAL` name the amount paid although they also name a tax or rounding.
    static func strongLabel(_ letters: String) -> Bool {
        ["TOTALINCL", "TOTALROUNDED", "ROUNDEDTOTAL", "ROUNDTOTAL", "TOTALAFTERADJ", "TOTALSALESINCL", "NETTOTAL", "NETTTOTAL",
         "GRANDTOTAL", "TOTALTTC", "AMOUNTDUE"]
            .contains(where: { letters.includes($0) }) && !letters.includes("EXCL") && !letters.includes("SUBTOTAL")
    }

    /// The first amount on the next three lines that carry no label of their own.
    static func nextAmount(_ lines: [String], _ letters: [String], after index: Int) -> (amount: PrintedAmount, line: String)? {
        for next in lines.indices.dropFirst(index + 1).prefix(3) {
            if letters[next].count > 3, labelWeight(letters[next]) != nil || otherSums.contains(where: { letters[next].includes($0) }) {
                return nil
            }
            if let amount = AmountScanner.amounts(in: lines[next]).first(where: { $0.cents > 0 }) { return (amount, lines[next]) }
        }
        return nil
    }

    /// Cash given minus change returned equals the total.
    static func paymentConfirms(_ total: Int64, lines: [String], letters: [String]) -> Bool {
        let given = amounts(labelled: ["CASH", "TENDER", "GEGEBEN", "RECEIVED", "ESPECES"], lines, letters)
        let change = amounts(labelled: ["CHANGE", "RÜCKGELD", "RUCKGELD", "RENDU"], lines, letters)
        return given.contains { g in change.contains { g - $0 == total } || g == total && change.contains(0) }
    }

    /// A single cash amount less a single change amount is not the total.
    static func paymentContradicts(_ total: Int64, lines: [String], letters: [String]) -> Bool {
        let given = amounts(labelled: ["CASH", "TENDER", "GEGEBEN", "RECEIVED", "ESPECES"], lines, letters)
        let change = amounts(labelled: ["CHANGE", "RÜCKGELD", "RUCKGELD", "RENDU"], lines, letters)
        guard given.count == 1, change.count == 1, change[0] > 0, given[0] > change[0] else { return false }
        return given[0] - change[0] != total
    }

    /// The subtotal plus the tax and the rounding printed equals the total.
    static func sumConfirms(_ total: Int64, lines: [String], letters: [String]) -> Bool {
        let subtotals = amounts(labelled: ["SUBTOTAL", "SUBTTL", "ZWISCHENSUMME", "SOUSTOTAL"], lines, letters)
        let taxes = amounts(labelled: ["GST", "TAX", "VAT", "MWST", "TVA"], lines, letters) + [0]
        let rounding = amounts(labelled: ["ROUNDING", "RUNDUNG"], lines, letters, signed: true) + [0]
        return subtotals.contains { s in taxes.contains { t in rounding.contains { s + t + $0 == total } } }
    }

    /// No amount on the receipt but cash handed over is larger.
    static func largestConfirms(_ total: Int64, lines: [String], letters: [String]) -> Bool {
        let paid = Set(amounts(labelled: ["CASH", "TENDER", "RECEIVED", "GEGEBEN", "CHANGE"], lines, letters))
        let all = lines.flatMap { AmountScanner.amounts(in: $0).map(\.cents) }.filter { !paid.contains($0) }
        return all.max() == total
    }

    static func amounts(labelled labels: [String], _ lines: [String], _ letters: [String], signed: Bool = false) -> [Int64] {
        lines.indices.filter { i in labels.contains { letters[i].includes($0) } }
            .flatMap { i -> [Int64] in
                let own = AmountScanner.amounts(in: lines[i])
                let found = own.isEmpty ? (nextAmount(lines, letters, after: i).map { [$0.amount] } ?? []) : own
                return found.map { signed ? $0.cents : abs($0.cents) }
            }
    }

    /// The tax printed as an amount on a GST / VAT / MwSt / TVA line, if exactly one value is printed so.
    static func tax(lines: [String]) -> (amount: PrintedAmount, line: String)? {
        let letters = lines.map(lettersOnly)
        var found: [(PrintedAmount, String)] = []
        for (index, line) in lines.enumerated() where ["GST", "VAT", "TAX", "MWST", "TVA", "UST"].contains(where: { letters[index].hasPrefix($0) || letters[index].hasPrefix("TOTAL" + $0) }) {
            guard !letters[index].includes("INCL"), !letters[index].includes("EXCL"), !letters[index].includes("SUMMARY"),
                  !letters[index].includes("REG"), !letters[index].includes("ID"), !letters[index].includes("NO") else { continue }
            if let amount = AmountScanner.amounts(in: line).last { found.append((amount, line)) }
        }
        let values = Set(found.map(\.0.cents))
        guard values.count == 1, let first = found.first else { return nil }
        return (first.0, first.1)
    }

    static func lettersOnly(_ line: String) -> String {
        String(line.uppercased().filter { $0.isLetter })
    }
}

extension String {
    /// Whether `label` occurs in this string as strings compare (canonical equivalence: a decomposed Ü
    /// is Ü). Foundation's `contains`, which every file of this module sees because Dates.swift imports
    /// Foundation, bridges both strings to NSString on each call and was a third of `receipt index`'s
    /// CPU (docs/BENCHMARKS.md). A line of ASCII letters, nearly every line, is one byte a Character,
    /// so libc's byte search answers the same; any other line is compared Character by Character.
    func includes(_ label: String) -> Bool {
        var haystack = self
        if haystack.withUTF8({ $0.allSatisfy { $0 < 0x80 } }) {
            return haystack.withCString { h in label.withCString { strstr(h, $0) != nil } }
        }
        guard let first = label.first else { return true }
        var start = startIndex
        while let found = self[start...].firstIndex(of: first) {
            if self[found...].starts(with: label) { return true }
            start = index(after: found)
        }
        return false
    }
}
