import Foundation

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
        let candidates = header.filter { isNameLike($0) && !isOnlyLegalForm($0) }
        // A company's name may carry its branch's place (`(TAMAN DAYA) SDN BHD`): only a title before it disqualifies it.
        let companies = header.filter { hasCompanyWord($0) && !startsWithNotName($0) && !isOnlyLegalForm($0) && !tidy($0).isEmpty }
        if let company = companies.first(where: hasLegalForm) ?? companies.first {
            let name = tidy(continued(company, in: Array(header)))
            let sure = (hasLegalForm(company) || candidates.first == company) && readsClean(name)
            return (name, sure ? 0.9 : 0.8, company)
        }
        guard let first = candidates.first(where: { !tidy($0).isEmpty }) else { return nil }
        return (tidy(first), 0.6, first)
    }

    /// A name cut at `&` or `,` goes on on the next line (`HOME MASTER HARDWARE &` / `ELECTRICAL`).
    static func continued(_ line: String, in header: [String]) -> String {
        let trimmed = line.trimming([" ", "\t"])
        guard trimmed.hasSuffix("&") || trimmed.hasSuffix(","), let at = header.firstIndex(of: line), at + 1 < header.count,
              isNameLike(header[at + 1]) else { return line }
        return trimmed + " " + header[at + 1]
    }

    /// A line that is only a legal form (`BHD`, `SDN BHD`): the end of a name whose start OCR lost.
    static func isOnlyLegalForm(_ line: String) -> Bool {
        let words = line.uppercased().split { !$0.isLetterFast }
        return !words.isEmpty && words.allSatisfy { ["SDN", "BHD", "SDNBHD", "LTD", "LLC", "INC", "GMBH", "PLC"].contains($0) }
    }

    /// Whether a name reads as printed rather than as OCR's guess: on SROIE's thermal prints 11 % of
    /// the names filled were wrong, nearly all a misread of the right line (`MR O.T.Y. (M) SON BHD`,
    /// `HOnE MASTER`, `ALAM) SDN BHD`). Such a name is only suggested: a misread word mixes cases or
    /// letters with digits, a misread legal form is `SON`, a wrapped name starts with its bracket's end.
    static func readsClean(_ name: String) -> Bool {
        let upper = " " + name.uppercased() + " "
        if upper.containsFast(" SON BHD") || upper.containsFast(" SDN BHO") || upper.containsFast(" 5DN ") { return false }
        if let close = name.firstIndex(of: ")"), !name[..<close].contains("(") { return false }
        // No word of its own before the legal form (`RESTAURANT SDN BHD`, `CO. (M) SDN BHD`): the name's
        // start is on a line OCR lost.
        let words = name.uppercased().split(whereSeparator: { !$0.isLetter })
        let beforeForm = words.prefix { !["SDN", "BHD", "LTD", "LLC", "INC", "GMBH", "PLC"].contains($0) }
        if beforeForm.count < words.count,
           !beforeForm.contains(where: { $0.count >= 2 && $0 != "CO" && !companyWords.contains(String($0)) }) { return false }
        // Marks OCR made of a smudge: a name starting with one (`? g Alaf`, `#000002 BAIFU`), or a word in
        // lower case among capitals (`yy Avai Cash & Carry`, `TOKYO KITCHEN SDN BHD e`).
        if let first = name.first, !first.isLetter && !first.isNumber { return false }
        if name.filter(\.isLetter).count < 3 { return false }
        let lettered = name.split(whereSeparator: { !$0.isLetter }).filter { !$0.isEmpty }
        if lettered.contains(where: { $0.allSatisfy(\.isLowercase) }) && lettered.contains(where: { $0.contains(where: \.isUppercase) }) {
            return false
        }
        for word in name.split(whereSeparator: { !$0.isLetter && !$0.isNumber }) {
            let letters = word.filter(\.isLetter)
            // A digit after a letter (`S0N`, `B1D`); a number before letters is printed so (`24HR`, `7ELEVEN`).
            if let letter = word.firstIndex(where: \.isLetter), word[letter...].contains(where: \.isNumber) { return false }
            let tail = letters.dropFirst()
            if tail.contains(where: \.isLowercase) && tail.contains(where: \.isUppercase) { return false }
            if letters.first?.isLowercase == true && letters.contains(where: \.isUppercase) { return false }
        }
        return true
    }

    /// A legal form after the name (SDN BHD, S/B, GMBH, LLC …): the line is the company's own name.
    static func hasLegalForm(_ line: String) -> Bool {
        let upper = line.uppercased()
        let undotted = " " + (upper.isASCIIOnly ? upper.filter { $0 != "." } : upper.replacingOccurrences(of: ".", with: "")) + " "
        return [" SDN BHD", " S/B", " BHD", " LLC", " INC", " GMBH", " LTD", " LIMITED", " PLC", " SARL", " SRL", " AG ", " KG "]
            .contains { undotted.containsFast($0) }
    }

    static func isNameLike(_ line: String) -> Bool {
        let letters = line.count(where: \.isLetterFast)
        guard letters >= 3 else { return false }
        let digits = line.count(where: \.isNumberFast)
        if digits * 2 > letters { return false }
        let squeezed = Letters(normalized(line))
        if notNames.contains(where: { squeezed.hasPrefix($0) || $0.count >= 5 && squeezed.containsAsFoundation($0) }) { return false }
        // An address: a number then street words, or a postcode of five digits.
        let words = line.uppercased().split(separator: " ")
        if words.contains(where: { $0.count == 5 && $0.allSatisfy(\.isNumberFast) }) { return false }
        if line.containsFast("@") || line.uppercased().hasPrefix("NO.") || line.uppercased().hasPrefix("NO ") { return false }
        return true
    }

    static func startsWithNotName(_ line: String) -> Bool {
        let squeezed = normalized(line)
        return notNames.contains { squeezed.hasPrefix($0) }
    }

    static func hasCompanyWord(_ line: String) -> Bool {
        let upper = " " + line.uppercased() + " "
        if upper.isASCIIOnly {
            return companyWords.contains { word in
                guard let range = upper.firstByteRange(of: word) else { return false }
                let bytes = Array(upper.utf8)
                return !bytes[range.lowerBound - 1].isASCIILetter && !(range.upperBound < bytes.count && bytes[range.upperBound].isASCIILetter)
            }
        }
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
        var name = line.split(whereSeparator: \.isWhitespaceFast).joined(separator: " ")
        if let open = name.lastIndex(of: "("), name[open...].contains(where: \.isNumber) {
            name = String(name[..<open])
        }
        // A label before the name (`Dimiliki: BANH MI CAFE SDN BHD`, Malay for owned by) and a
        // registration number after it (`… SDN BHD 1110644-V`) are not the name.
        if let colon = name.firstIndex(of: ":"), name[..<colon].split(separator: " ").count <= 2,
           name[name.index(after: colon)...].contains(where: \.isLetter) {
            name = String(name[name.index(after: colon)...])
        }
        if let last = name.split(separator: " ").last, last.filter(\.isNumber).count >= 5 {
            name = String(name.dropLast(last.count))
        }
        let stray: Set<Character> = [" ", ",", "-", "*", "|", ":", "_", "~", "»", "«", "•", "'", "\"", "‘", "’", "“", "”", "©"]
        name = name.trimming(stray)
        return name
    }

    /// A header line as aliases are keyed: upper case, letters and digits only.
    static func normalized(_ line: String) -> String {
        if line.isASCIIOnly {
            return String(decoding: line.utf8.lazy.filter { $0.isASCIILetter || $0.isASCIIDigit }.map { $0.isASCIILetter ? $0 & 0xDF : $0 },
                          as: UTF8.self)
        }
        return String(line.uppercased().filter { $0.isLetter || $0.isNumber })
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

extension Letters {
    /// Foundation's `contains` (an NSString search), by bytes when both strings are ASCII.
    func containsAsFoundation(_ other: String) -> Bool {
        bytes != nil && other.isASCIIOnly ? !other.isEmpty && includes(other) : text.contains(other)
    }
}

extension String {
    /// Foundation's `contains` (an NSString search), by bytes when both strings are ASCII: bridging
    /// both strings on every call was a third of reading a receipt's header.
    func containsFast(_ other: String) -> Bool {
        if isASCIIOnly, other.isASCIIOnly { return !other.isEmpty && includesBytes(other) }
        return contains(other)
    }
}
