/// Finds the shop's name in a receipt's header: the first lines, less what is not a name (a document
/// title such as TAX INVOICE, an address, a registration or telephone number, a greeting).
enum MerchantFinder {
    /// Lines read from the top for the name.
    static let headerLines = 8

    /// Words that end a company's name: a line carrying one is the name itself.
    static let companyWords = [
        "SDN BHD", "SDN. BHD", "SDNBHD", "S/B", "BHD", "ENTERPRISE", "TRADING", "LLC", "INC", "CORP", "GMBH", "LTD", "LIMITED",
        "S.A.", "SARL", "S.R.L", "AG", "KG", "PLC", "CO.", "COMPANY", "PHARMACY", "RESTAURANT", "RESTORAN", "PERNIAGAAN",
        "HARDWARE", "MARKET", "MART", "STORE", "SUPERMARKET", "APOTHEKE", "PHARMACIE", "HOTEL", "CAFE", "CAFÉ", "BAKERY",
    ]

    /// Lines that are never the name.
    static let notNames = [
        "TAXINVOICE", "INVOICE", "RECEIPT", "CASHBILL", "SIMPLIFIED", "WELCOME", "THANKYOU", "GSTID", "GSTNO", "GSTREG",
        "COREG", "CONO", "COMPANYNO", "REGNO", "ROC", "TEL", "FAX", "PHONE", "EMAIL", "WWW", "HTTP", "JALAN", "JLN", "TAMAN", "LOT", "STREET", "ROAD",
        "AVENUE", "STRASSE", "STRAßE", "RUE", "DATE", "TIME", "CASHIER", "TABLE", "ORDER", "DOCUMENTNO", "BILLNO", "MEMBER",
        "QUITTUNG", "KASSENBON", "BELEG", "RECHNUNG", "FACTURE", "TICKET", "COPY", "DUPLICATE", "REPRINT", "OPENINGHOURS",
        "SHOPPINGHOURS", "UIDNR", "STNR", "SIRET", "TVAINTRA", "VATNO", "VATREG", "ABN",
    ]

    /// The name and a confidence 0–1, with the line it came from. `aliases` maps a header line, as
    /// `normalized` makes it, to the name the household gave that shop.
    static func find(lines: [String], aliases: [String: String]) -> (name: String, confidence: Double, line: String)? {
        let header = lines.prefix(headerLines)
        for line in header {
            if let alias = aliases[normalized(line)] { return (alias, 0.97, line) }
        }
        let candidates = header.filter(isNameLike)
        // A company's name may carry its branch's place (`(TAMAN DAYA) SDN BHD`): only a title before it disqualifies it.
        let companies = header.filter { hasCompanyWord($0) && !startsWithNotName($0) && !tidy($0).isEmpty }
        if let company = companies.first(where: hasLegalForm) ?? companies.first {
            let sure = hasLegalForm(company) || candidates.first == company
            return (tidy(company), sure ? 0.9 : 0.8, company)
        }
        guard let first = candidates.first(where: { !tidy($0).isEmpty }) else { return nil }
        return (tidy(first), 0.6, first)
    }

    /// A legal form after the name (SDN BHD, S/B, GMBH, LLC …): the line is the company's own name.
    static func hasLegalForm(_ line: String) -> Bool {
        let upper = " " + line.uppercased().replacingOccurrences(of: ".", with: "") + " "
        return [" SDN BHD", " S/B", " BHD", " LLC", " INC", " GMBH", " LTD", " LIMITED", " PLC", " SARL", " SRL", " AG ", " KG "]
            .contains { upper.contains($0) }
    }

    static func isNameLike(_ line: String) -> Bool {
        let letters = line.filter(\.isLetter)
        guard letters.count >= 3 else { return false }
        let digits = line.filter(\.isNumber).count
        if digits * 2 > letters.count { return false }
        let squeezed = String(line.uppercased().filter { $0.isLetter || $0.isNumber })
        if notNames.contains(where: { squeezed.hasPrefix($0) || squeezed.contains($0) && $0.count >= 5 }) { return false }
        // An address: a number then street words, or a postcode of five digits.
        let words = line.uppercased().split(separator: " ")
        if words.contains(where: { $0.count == 5 && $0.allSatisfy(\.isNumber) }) { return false }
        if line.contains("@") || line.uppercased().hasPrefix("NO.") || line.uppercased().hasPrefix("NO ") { return false }
        return true
    }

    static func startsWithNotName(_ line: String) -> Bool {
        let squeezed = String(line.uppercased().filter { $0.isLetter || $0.isNumber })
        return notNames.contains { squeezed.hasPrefix($0) }
    }

    static func hasCompanyWord(_ line: String) -> Bool {
        let upper = " " + line.uppercased() + " "
        return companyWords.contains { word in
            guard let range = upper.range(of: word) else { return false }
            let before = upper[upper.index(before: range.lowerBound)]
            let after = range.upperBound < upper.endIndex ? upper[range.upperBound] : " "
            return !before.isLetter && !after.isLetter
        }
    }

    /// The name as printed, its spacing tidied, stray marks at its ends (`* `, `| `, `: `, ` _`) and a
    /// trailing registration number in brackets dropped.
    static func tidy(_ line: String) -> String {
        var name = line.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        if let open = name.lastIndex(of: "("), name[open...].contains(where: \.isNumber) {
            name = String(name[..<open])
        }
        let stray: Set<Character> = [" ", ",", "-", "*", "|", ":", "_", "~", "»", "«", "•", "'", "\"", "‘", "’", "“", "”", "©"]
        name = name.trimming(stray)
        return name
    }

    /// A header line as aliases are keyed: upper case, letters and digits only.
    static func normalized(_ line: String) -> String {
        String(line.uppercased().filter { $0.isLetter || $0.isNumber })
    }
}

extension String {
    func trimming(_ set: Set<Character>) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }
}
