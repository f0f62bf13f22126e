import Foundation
import ReceiptServer
import ReceiptWire
import TestSupport
import XCTest

/// One set of rules for a receipt's fields (issue #34): the same values given to `receipt import`
/// and `receipt edit`, to the web view's edit form (as a browser reads and sends it back) and to a
/// push are stored alike, or refused alike with the same one-line reason.
final class FieldRulesAgreementTests: HouseholdTestCase {
    /// A field, a value a person gives, and what must be stored (nil: nothing) or the reason it is refused.
    struct Case {
        let field: String
        let given: String
        let outcome: Outcome
    }

    enum Outcome: Equatable {
        case stored(String?)
        case refused(String)
    }

    static let cases: [Case] = [
        Case(field: "currency", given: "XYZ",
             outcome: .refused("unknown currency 'XYZ': expected an ISO 4217 code such as USD or EUR")),
        Case(field: "currency", given: "eur", outcome: .stored("EUR")),
        Case(field: "total", given: "37,80", outcome: .stored("37.80")),  // a European keypad's decimal comma
        Case(field: "total", given: "-5", outcome: .stored("-5")),
        Case(field: "total", given: "12.3456", outcome: .stored("12.3456")),
        Case(field: "total", given: "12.34567",
             outcome: .refused("invalid total '12.34567': expected a decimal amount such as 12.34")),
        Case(field: "total", given: "1234567890123456",
             outcome: .refused("invalid total '1234567890123456': expected a decimal amount such as 12.34")),
        Case(field: "total", given: "1e9", outcome: .refused("invalid total '1e9': expected a decimal amount such as 12.34")),
        Case(field: "total", given: "1,000", outcome: .refused("invalid total '1,000': expected a decimal amount such as 12.34")),
        Case(field: "date", given: "2025-02-30", outcome: .refused("invalid date '2025-02-30': no such day")),
        Case(field: "date", given: "2024-02-29", outcome: .stored("2024-02-29")),
        Case(field: "merchant", given: "", outcome: .stored(nil)),
        Case(field: "merchant", given: "Café \"Ünï\" <b>", outcome: .stored("Café \"Ünï\" <b>")),
        Case(field: "note", given: "line one\nline two", outcome: .stored("line one\nline two")),
        Case(field: "merchant", given: "  Acme  ", outcome: .stored("  Acme  ")),
        Case(field: "merchant", given: "   ", outcome: .stored("   ")),
        Case(field: "date", given: " 2025-03-04 ", outcome: .stored("2025-03-04")),
        Case(field: "currency", given: " eur ", outcome: .stored("EUR")),
        Case(field: "total", given: " 12.30 ", outcome: .stored("12.30")),
        Case(field: "note", given: String(repeating: "n", count: 4097), outcome: .refused("note is too long (4097 bytes; at most 4096)")),
    ]

    func testTheCommandLineTheWebFormAndAPushAgreeOnEveryField() async throws {
        let (h, signedInWeb) = try await signedIn()
        defer { Task { await h.shutdown() } }
        var web = signedInWeb
        let alice = h["alice"]

        for (n, c) in Self.cases.enumerated() {
            let what = "\(c.field) \(c.given.debugDescription)"
            let file = try h.file("f\(n).pdf", size: 200, seed: UInt64(n + 1))
            let imported = try await cli(alice, ["import", file.path, "--\(c.field)", c.given, "--json"])
            XCTAssertEqual(imported, c.outcome, "receipt import --\(what)")

            let base = try await alice.ok(["import", try h.file("e\(n).pdf", size: 200, seed: UInt64(1000 + n)).path, "--json"])
            let id = importedID(base)
            let edited = try await cli(alice, ["edit", id, "--\(c.field)", c.given, "--json"], id: id)
            XCTAssertEqual(edited, c.outcome, "receipt edit --\(what)")

            let viaWeb = try await webEdit(&web, h, field: c.field, given: c.given, seed: UInt64(2000 + n))
            XCTAssertEqual(viaWeb, c.outcome, "the web view's edit form, \(what)")

            let pushed = try await push(h, field: c.field, given: c.given)
            switch c.outcome {
            case .refused:
                XCTAssertEqual(pushed, c.outcome, "a push of \(what)")
            case .stored(let value):
                // The wire carries the canonical form: a vault sends what its checks gave.
                let canonical = try await push(h, field: c.field, given: value)
                XCTAssertEqual(canonical, c.outcome, "a push of \(c.field) \(String(describing: value))")
                if value != c.given {
                    guard case .refused(let reason) = pushed else { XCTFail("a push of \(what) was stored as \(pushed)"); continue }
                    XCTAssertTrue(value == nil ? reason.contains("leave it out") : reason.contains("send '\(value ?? "")'"), reason)
                }
            }
        }
    }

    /// `receipt ARGS` in the member's vault: the field as `list --json` shows it, or the one line of stderr.
    func cli(_ member: Member, _ args: [String], id: String? = nil) async throws -> Outcome {
        let field = args.first { $0.hasPrefix("--") }.map { String($0.dropFirst(2)) } ?? ""
        let r = try await member.run(args)
        if r.status != 0 {
            XCTAssertEqual(r.status, 2, r.stderr)
            return .refused(try oneLine(r.stderr, dropping: "receipt: "))
        }
        let stored = try await member.receipts()[id ?? importedID(r)]
        return .stored(stored?[field] as? String)
    }

    /// Uploads a file, then does what a browser does with the receipt's edit form: reads its fields,
    /// changes one and sends them all back. An accepted edit is then saved again unchanged, which
    /// must change nothing.
    func webEdit(_ web: inout WebTestClient, _ h: Household, field: String, given: String, seed: UInt64) async throws -> Outcome {
        let upload = try await web.upload("/z/alice/z", files: [("w\(seed).pdf", TestData.random(100, seed: seed))])
        checkEqual(upload.status, 303, upload.body)
        let id = try XCTUnwrap(upload.header("Location")?.split(separator: "/").last.map(String.init))
        let path = "/z/alice/z/r/\(id)"
        var fields = Self.formFields(try await web.get(path).body)
        fields[field] = given.replacingOccurrences(of: "\n", with: "\r\n")  // as a browser sends a typed line break
        let answer = try await web.post(path, fields.sorted { $0.key < $1.key })
        if answer.status != 303 {
            XCTAssertEqual(answer.status, 400, answer.body)
            let alert = try XCTUnwrap(answer.body.range(of: #"<p role="alert">"#).map { answer.body[$0.upperBound...].prefix { $0 != "<" } })
            return .refused(try oneLine(Self.unescaped(String(alert)), dropping: ""))
        }
        let saved = try await serverReceipt(h, id)
        let unchanged = try await web.post(path, Self.formFields(try await web.get(path).body).sorted { $0.key < $1.key })
        checkEqual(unchanged.status, 303, unchanged.body)
        var again = try await serverReceipt(h, id)
        again.modifiedAt = saved.modifiedAt
        XCTAssertEqual(again, saved, "saving the edit form of \(field) \(given.debugDescription) unchanged changed the receipt")
        if field != "merchant" { XCTAssertNil(saved.merchant, "the web view stored a merchant no one gave") }
        return .stored(Self.value(of: field, in: saved))
    }

    /// Pushes a new receipt with only `field` set to `given`.
    func push(_ h: Household, field: String, given: String?) async throws -> Outcome {
        var receipt = WireReceipt(createdAt: 1, modifiedAt: 1)
        switch field {
        case "merchant": receipt.merchant = given
        case "date": receipt.date = given
        case "total": receipt.total = given
        case "currency": receipt.currency = given
        default: receipt.note = given
        }
        let id = UUID().uuidString.lowercased()
        let answer = try await h.raw.json(.POST, "/v1/zones/alice/z/push", token: h["alice"].token,
                                          WirePushRequest(records: [WirePushRecord(id: id, baseTag: nil, receipt: receipt)]))
        let result = try XCTUnwrap(try JSONDecoder().decode(WirePushResponse.self, from: Data(answer.body)).results.first, answer.text)
        if result.status == .rejected { return .refused(try oneLine(result.error ?? "", dropping: "receipt \(id): ")) }
        checkEqual(result.status, .saved, answer.text)
        return .stored(Self.value(of: field, in: try await serverReceipt(h, id)))
    }

    func serverReceipt(_ h: Household, _ id: String) async throws -> WireReceipt {
        var since = ""
        while true {
            let page = try JSONDecoder().decode(WireChangesResponse.self, from: Data(try await h.raw.call(
                .GET, "/v1/zones/alice/z/changes" + (since.isEmpty ? "" : "?since=\(since)"), token: h["alice"].token).body))
            if let receipt = page.records.last(where: { $0.id == id })?.receipt { return receipt }
            guard page.more else { throw HarnessError("receipt \(id) is not on the server") }
            since = page.changeToken
        }
    }

    static func value(of field: String, in r: WireReceipt) -> String? {
        ["merchant": r.merchant, "date": r.date, "total": r.total, "currency": r.currency, "note": r.note][field] ?? nil
    }

    /// A refusal is one line naming what was wrong.
    func oneLine(_ text: String, dropping prefix: String) throws -> String {
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertFalse(line.contains("\n"), "not one line: \(text)")
        return line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : line
    }

    /// The edit form's fields as a browser sends them back: an `<input>`'s value loses its line
    /// breaks (HTML's value sanitization), a `<textarea>` keeps them, as CRLF.
    static func formFields(_ page: String) -> [String: String] {
        guard let start = page.range(of: #"<h2 id="edit">"#) else { return [:] }
        let form = String(page[start.upperBound...])
        var fields: [String: String] = [:]
        let input = try! NSRegularExpression(pattern: #"<input [^>]*name="([a-zA-Z]+)"[^>]*value="([^"]*)""#)
        let textarea = try! NSRegularExpression(pattern: #"<textarea [^>]*name="([a-zA-Z]+)"[^>]*>([^<]*)</textarea>"#)
        let whole = NSRange(form.startIndex..., in: form)
        for m in input.matches(in: form, range: whole) {
            let name = String(form[Range(m.range(at: 1), in: form)!])
            fields[name] = unescaped(String(form[Range(m.range(at: 2), in: form)!])).filter { $0 != "\n" && $0 != "\r" && $0 != "\r\n" }
        }
        for m in textarea.matches(in: form, range: whole) {
            var text = unescaped(String(form[Range(m.range(at: 2), in: form)!]))
            if text.hasPrefix("\n") { text.removeFirst() }
            // Form submission sends every line break as CRLF.
            fields[String(form[Range(m.range(at: 1), in: form)!])] = text.replacingOccurrences(of: "\r\n", with: "\n")
                .replacingOccurrences(of: "\n", with: "\r\n")
        }
        fields["csrf"] = nil
        return fields
    }

    static func unescaped(_ html: String) -> String {
        var out = html
        let entity = try! NSRegularExpression(pattern: "&#(x?)([0-9a-fA-F]+);")
        for m in entity.matches(in: html, range: NSRange(html.startIndex..., in: html)).reversed() {
            let hex = !Range(m.range(at: 1), in: html)!.isEmpty
            let digits = String(html[Range(m.range(at: 2), in: html)!])
            if let code = UInt32(digits, radix: hex ? 16 : 10), let scalar = Unicode.Scalar(code),
               let range = Range(m.range, in: out) {
                out.replaceSubrange(range, with: String(Character(scalar)))
            }
        }
        for (name, char) in [("&quot;", "\""), ("&lt;", "<"), ("&gt;", ">"), ("&apos;", "'"), ("&amp;", "&")] {
            out = out.replacingOccurrences(of: name, with: char)
        }
        return out
    }
}
