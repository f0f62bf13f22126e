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

    /// The amount paid, with a confidence 0–1, or nil when no line names it. A total line the receipt's
    /// arithmetic does not confirm gives way to the one amount that two of its sums and prints agree on
    /// (`agreedAmount`): OCR misreads the total's digits (`TOTAL 1.00` for 71.00) more often than it
    /// misreads cash, change, subtotal and tax so that they still add up.
    static func find(_ text: ReceiptLines) -> (amount: PrintedAmount, confidence: Double, line: String)? {
        let labelled = labelledTotal(text)
        if let labelled, labelled.confidence >= ReceiptReader.fillThreshold { return labelled }
        // Within a rounding of the total line (cash rounding, a misread last digit), the line stays: the
        // receipt prints both amounts, and which one it calls its total is the line's to say.
        if let agreed = agreedAmount(text), labelled.map({ abs($0.amount.cents - agreed.amount.cents) > 10 }) ?? true {
            return agreed
        }
        return labelled
    }

    /// Where a tax summary's table (GST SUMMARY … TOTAL 4.60 0.28) starts: it sums the tax, not the
    /// receipt, so its rows are no total.
    static func summaryStart(_ text: ReceiptLines) -> Int {
        text.letters.firstIndex { $0.includes("SUMMARY") || $0.includes("ZUSAMMENFASSUNG") } ?? text.lines.count
    }

    /// The amount of the strongest total line, and how sure the receipt makes it.
    static func labelledTotal(_ text: ReceiptLines) -> (amount: PrintedAmount, confidence: Double, line: String)? {
        let lines = text.lines
        var candidates: [Candidate] = []
        let summary = summaryStart(text)
        for (index, line) in lines.enumerated().prefix(summary) {
            guard let weight = text.labelWeights[index] else { continue }
            if let amount = text.amounts[index].last(where: { $0.cents > 0 }) {
                candidates.append(Candidate(amount: amount, line: line, weight: weight))
            } else if let next = nextAmount(text, after: index) {
                // A label alone on its line, its amount on the next ones (a two-column print read a row at a time).
                candidates.append(Candidate(amount: next.amount, line: line + " " + next.line, weight: weight * 0.9))
            }
        }
        guard let best = candidates.max(by: { $0.weight < $1.weight }) else { return nil }
        let agreeing = candidates.filter { $0.amount.cents == best.amount.cents }
        let disagreeing = candidates.filter { $0.amount.cents != best.amount.cents && $0.weight >= best.weight }
        var confidence = best.weight * 0.8
        if agreeing.count > 1 { confidence += 0.1 }
        if largestConfirms(best.amount.cents, text) { confidence += 0.05 }
        // Arithmetic the receipt prints that comes out at this amount: a misread amount almost never does.
        let bestLine = lines.firstIndex { best.line.hasPrefix($0) } ?? lines.count
        if best.weight >= 0.85, paymentConfirms(best.amount.cents, text) || sumConfirms(best.amount.cents, text)
            || itemsConfirm(best.amount.cents, text, above: bestLine)
            || printedAgain(best.amount.cents, besides: bestLine, text, above: summary) {
            confidence = max(confidence + 0.15, 0.92)
        }
        if !disagreeing.isEmpty { confidence -= 0.3 }
        // One cash and one change line that do not come out at it: one of the three is misread (on
        // SROIE's prints, the total more often than not: 34.00 items read from 31.00, cash 101 less 70).
        if paymentContradicts(best.amount.cents, text) { confidence = min(confidence, 0.8) }
        return (best.amount, max(0, min(1, confidence)), best.line)
    }

    /// The one amount that two independent pieces of the receipt agree on, at least one of them
    /// arithmetic: cash less a change that is not zero, the subtotal plus tax and rounding, and the
    /// amount printed on a total or payment line. Nil when no amount, or more than one, has two.
    static func agreedAmount(_ text: ReceiptLines) -> (amount: PrintedAmount, confidence: Double, line: String)? {
        let summary = summaryStart(text)
        let given = amounts(labelled: givenLabels, text), change = amounts(labelled: changeLabels, text).filter { $0 > 0 }
        let paidBy = Set(given.flatMap { g in change.map { g - $0 } }.filter { $0 > 0 })
        // Each amount of a total or payment line, with the first line that prints it. Cash that was
        // given change is more than the total: its line says nothing of the total then.
        func names(_ i: Int) -> Bool {
            text.labelWeights[i] != nil || paymentLabels.contains { label in
                text.letters[i].includes(label) && (change.isEmpty || !givenLabels.contains(label))
            }
        }
        var printed: [Int64: Int] = [:]
        for i in 0..<summary where names(i) {
            for amount in text.amounts[i] where amount.cents > 0 && printed[amount.cents] == nil { printed[amount.cents] = i }
        }
        let sums = sums(text)
        let agreed = Set(printed.keys).union(paidBy).filter { cents in
            let arithmetic = (paidBy.contains(cents) ? 1 : 0) + (sums.contains(cents) ? 1 : 0)
            return arithmetic >= 1 && arithmetic + (printed[cents] == nil ? 0 : 1) >= 2
        }
        guard agreed.count == 1, let cents = agreed.first else { return nil }
        // A receipt that rounds and prints the amount before its rounding too has two totals cents apart:
        // agreement cannot tell which one it calls its total.
        let printedAnywhere = Set(text.amounts.joined().map(\.cents))
        guard !amounts(labelled: roundingLabels, text, signed: true)
            .contains(where: { $0 != 0 && printedAnywhere.contains(cents - $0) }) else { return nil }
        let line = printed[cents].map { text.lines[$0] }
            ?? text.indices.first { i in changeLabels.contains { text.letters[i].includes($0) } }.map { text.lines[$0] } ?? ""
        let amount = printed[cents].flatMap { i in text.amounts[i].first { $0.cents == cents } }
            ?? PrintedAmount(cents: cents, currency: nil, dollarSign: false)
        return (amount, 0.92, line)
    }

    /// Lines that say how the total was paid.
    static let paymentLabels = ["VISA", "MASTER", "CARD", "DEBIT", "CREDIT", "AMEX", "PAYMENT", "CASH", "TENDER", "PAID", "EFTPOS"]

    /// Another line above `end` names this amount as the total (a rounded, gross or nett total) or as
    /// what paid it (the card, the exact cash): two prints of one amount are seldom misread alike.
    static func printedAgain(_ total: Int64, besides index: Int, _ text: ReceiptLines, above end: Int) -> Bool {
        (0..<end).contains { i in
            i != index && (text.labelWeights[i] != nil || paymentLabels.contains { text.letters[i].includes($0) })
                && text.amounts[i].contains { $0.cents == total }
        }
    }

    /// The items above the total line (above `end`) add up to it (the last amount of each line that names no sum).
    static func itemsConfirm(_ total: Int64, _ text: ReceiptLines, above end: Int) -> Bool {
        var sum: Int64 = 0
        var count = 0
        for i in 0..<end {
            guard text.labelWeights[i] == nil, !["TOTAL", "CASH", "CHANGE", "TENDER", "PAID", "CARD", "VISA"]
                .contains(where: { text.letters[i].includes($0) }), let amount = text.amounts[i].last else { continue }
            sum += amount.cents
            count += 1
        }
        return count >= 1 && sum == total
    }

    static func labelWeight(_ letters: Letters) -> Double? {
        guard !otherSums.contains(where: { letters.includes($0) }) || strongLabel(letters) else { return nil }
        return totalLabels.first(where: { letters.includes($0.label) })?.weight
    }

    /// `TOTAL INCL GST` or `ROUNDED TOTAL` name the amount paid although they also name a tax or rounding.
    static func strongLabel(_ letters: Letters) -> Bool {
        ["TOTALINCL", "TOTALROUNDED", "ROUNDEDTOTAL", "ROUNDTOTAL", "TOTALAFTERADJ", "TOTALSALESINCL", "NETTOTAL", "NETTTOTAL",
         "GRANDTOTAL", "TOTALTTC", "AMOUNTDUE"]
            .contains(where: { letters.includes($0) }) && !letters.includes("EXCL") && !letters.includes("SUBTOTAL")
    }

    /// The first amount on the next three lines that carry no label of their own.
    static func nextAmount(_ text: ReceiptLines, after index: Int) -> (amount: PrintedAmount, line: String)? {
        for next in text.indices.dropFirst(index + 1).prefix(3) {
            let letters = text.letters[next]
            if letters.count > 3, text.labelWeights[next] != nil || otherSums.contains(where: { letters.includes($0) }) {
                return nil
            }
            if let amount = text.amounts[next].first(where: { $0.cents > 0 }) { return (amount, text.lines[next]) }
        }
        return nil
    }

    static let givenLabels = ["CASH", "TENDER", "GEGEBEN", "RECEIVED", "ESPECES"]
    static let changeLabels = ["CHANGE", "RÜCKGELD", "RUCKGELD", "RENDU"]

    /// Cash given minus change returned equals the total.
    static func paymentConfirms(_ total: Int64, _ text: ReceiptLines) -> Bool {
        let given = amounts(labelled: givenLabels, text)
        let change = amounts(labelled: changeLabels, text)
        return given.contains { g in change.contains { g - $0 == total } || g == total && change.contains(0) }
    }

    /// A single cash amount less a single change amount is not the total.
    static func paymentContradicts(_ total: Int64, _ text: ReceiptLines) -> Bool {
        let given = amounts(labelled: givenLabels, text)
        let change = amounts(labelled: changeLabels, text)
        guard given.count == 1, change.count == 1, change[0] > 0, given[0] > change[0] else { return false }
        return given[0] - change[0] != total
    }

    /// The subtotal plus the tax and the rounding printed equals the total.
    static func sumConfirms(_ total: Int64, _ text: ReceiptLines) -> Bool { sums(text).contains(total) }

    static let roundingLabels = ["ROUNDING", "RUNDUNG"]

    /// Every subtotal plus a tax (or none) and a rounding (or none) the receipt prints.
    static func sums(_ text: ReceiptLines) -> Set<Int64> {
        let subtotals = amounts(labelled: ["SUBTOTAL", "SUBTTL", "ZWISCHENSUMME", "SOUSTOTAL"], text)
        let taxes = amounts(labelled: ["GST", "TAX", "VAT", "MWST", "TVA"], text) + [0]
        let rounding = amounts(labelled: roundingLabels, text, signed: true) + [0]
        return Set(subtotals.flatMap { s in taxes.flatMap { t in rounding.map { s + t + $0 } } })
    }

    /// No amount on the receipt but cash handed over is larger.
    static func largestConfirms(_ total: Int64, _ text: ReceiptLines) -> Bool {
        let paid = Set(amounts(labelled: ["CASH", "TENDER", "RECEIVED", "GEGEBEN", "CHANGE"], text))
        let all = text.amounts.flatMap { $0.map(\.cents) }.filter { !paid.contains($0) }
        return all.max() == total
    }

    static func amounts(labelled labels: [String], _ text: ReceiptLines, signed: Bool = false) -> [Int64] {
        text.indices.filter { i in labels.contains { text.letters[i].includes($0) } }
            .flatMap { i -> [Int64] in
                let own = text.amounts[i]
                let found = own.isEmpty ? (nextAmount(text, after: i).map { [$0.amount] } ?? []) : own
                return found.map { signed ? $0.cents : abs($0.cents) }
            }
    }

    /// The tax printed as an amount on a GST / VAT / MwSt / TVA line, if exactly one value is printed so.
    static func tax(_ text: ReceiptLines) -> (amount: PrintedAmount, line: String)? {
        var found: [(PrintedAmount, String)] = []
        for (index, line) in text.lines.enumerated() {
            let letters = text.letters[index]
            guard ["GST", "VAT", "TAX", "MWST", "TVA", "UST"].contains(where: { letters.hasPrefix($0) || letters.hasPrefix("TOTAL" + $0) }),
                  !letters.includes("INCL"), !letters.includes("EXCL"), !letters.includes("SUMMARY"),
                  !letters.includes("REG"), !letters.includes("ID"), !letters.includes("NO") else { continue }
            if let amount = text.amounts[index].last { found.append((amount, line)) }
        }
        let values = Set(found.map(\.0.cents))
        guard values.count == 1, let first = found.first else { return nil }
        return (first.0, first.1)
    }

    /// The letters of `line` in upper case.
    static func lettersOnly(_ line: String) -> String { Letters(lettersOf: line).text }
}
