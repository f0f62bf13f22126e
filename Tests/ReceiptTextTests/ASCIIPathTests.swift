import Foundation
@testable import ReceiptText
import XCTest

/// The reader reads an ASCII line from its bytes and any other line Character by Character (Unicode's
/// tables were most of `receipt index`'s CPU): both ways must read every ASCII line alike, CR LF, tabs,
/// vertical tabs, case and punctuation included.
final class ASCIIPathTests: XCTestCase {
    let lines = [
        "TOTAL 1,234.56", "Total: $16.85", "ROUNDING ADJUSTMENT -RM 0.02", "REFUND 19.99-", "Betrag 1'234.50 CHF",
        "25/12/2018 14:32", "Date:O9/02/17 10:2O", "14.32 PM", "FORM 12.00", "12,345,67", "total 12.30.", "US$ 5.00 S$4.00",
        "Jan 12, 2019", "05 MAR 2018", "  \tGST SUMMARY\t", "Sub-Total (RM) 4.60 0.28", "", "a", "---", "(9.90)USD",
        "1O-O2-2O19 TOTAL", "CK 11-22-31", "x\u{0B}y\u{0C}z 1.00",
    ]

    func testAmountsReadFromBytesAsFromCharacters() {
        for line in lines {
            XCTAssertEqual(AmountScanner.amounts(in: line), AmountScanner.amounts(in: Array(line.uppercased())), line)
        }
    }

    func testDatesTokenizedFromBytesAsFromCharacters() {
        for line in lines {
            let upper = line.uppercased()
            XCTAssertEqual(DateScanner.tokenize(upper + " "), DateScanner.tokenize(upper + " É").dropLast(), line)
            XCTAssertEqual(DateScanner.zeroesRead(upper) + " É", DateScanner.zeroesRead(upper + " É"), line)
        }
    }

    func testLettersAndLabelsFromBytesAsFromCharacters() {
        for line in lines {
            let letters = Letters(lettersOf: line)
            XCTAssertEqual(letters.text, String(line.uppercased().filter(\.isLetter)), line)
            XCTAssertEqual(MerchantFinder.normalized(line), String(line.uppercased().filter { $0.isLetter || $0.isNumber }), line)
            for label in TotalFinder.otherSums + TotalFinder.totalLabels.map(\.label) + ["", "SUMMARY", "RÜCKGELD", "O9"] {
                // As Foundation finds it, an empty label aside (found everywhere here, nowhere by Foundation).
                XCTAssertEqual(letters.includes(label), label.isEmpty || letters.text.range(of: label) != nil, "\(line) \(label)")
                XCTAssertEqual(Letters(line).includes(label), label.isEmpty || line.range(of: label) != nil, "\(line) \(label)")
                XCTAssertEqual(line.includes(label), label.isEmpty || line.range(of: label) != nil, "\(line) \(label)")
            }
        }
    }

    func testLinesAndSignaturesFromBytesAsFromCharacters() {
        let texts = lines + [lines.joined(separator: "\n"), lines.joined(separator: "\r\n"), lines.joined(separator: " \t\r"),
                             "One", "Tesco\r\n\r\n  2x MILK,  1.20\n\u{0B}total: 1.20!"]
        for text in texts {
            let byCharacters = text.split(whereSeparator: \.isNewline).map { String($0).trimming([" ", "\t"]) }.filter { !$0.isEmpty }
            XCTAssertEqual(ReceiptReader.lines(text), byCharacters, text)
            XCTAssertEqual(TextSignature.asciiShingleHashes(text),
                           Set(TextSignature.shingles(TextSignature.words(text)).map { TextSignature.fnv1a($0.utf8) }), text)
        }
        XCTAssertNil(TextSignature.asciiShingleHashes("Café au lait"), "a text beyond ASCII is read by Characters")
    }
}
