import Foundation
import ReceiptText
import TestSupport
import XCTest

/// The extractor against the real tools (poppler-utils, tesseract-ocr, tesseract-ocr-eng: a missing
/// tool fails these tests) and against fake tools that hang or crash.
final class TextExtractorTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures").path

    func realTools() throws -> ExtractorTools {
        let tools = try ExtractorTools.locate(searchPath: "/usr/bin:/bin")
        XCTAssertNotNil(tools.pdftotext, "pdftotext is missing: apt-get install poppler-utils")
        XCTAssertNotNil(tools.pdftoppm, "pdftoppm is missing: apt-get install poppler-utils")
        XCTAssertNotNil(tools.tesseract, "tesseract is missing: apt-get install tesseract-ocr")
        XCTAssertTrue(tools.languages.contains("eng"), "Tesseract has no English: apt-get install tesseract-ocr-eng")
        return tools
    }

    func extract(_ file: String, _ mediaType: String, tools: ExtractorTools) throws -> Extraction {
        let scratch = try Scratch()
        return TextExtractor(tools: tools).extract(file: file, mediaType: mediaType, scratch: scratch.path)
    }

    func text(_ extraction: Extraction, file: StaticString = #filePath, line: UInt = #line) -> String {
        guard case .text(let text) = extraction else {
            XCTFail("expected text, got \(extraction)", file: file, line: line)
            return ""
        }
        return text
    }

    func testOCRReadsTheWordsOfAReceiptPhoto() throws {
        let got = text(try extract(Self.fixtures + "/2025/pharmacy.png", "image/png", tools: try realTools()))
        XCTAssertTrue(got.contains("Amoxicillin"), got)
        XCTAssertTrue(got.contains("23.95"), got)
        let jpeg = text(try extract(Self.fixtures + "/2025/corner-bakery.jpg", "image/jpeg", tools: try realTools()))
        XCTAssertTrue(jpeg.contains("Croissant"), jpeg)
    }

    func testAScannedPDFWithoutATextLayerIsReadByOCRPageByPage() throws {
        let got = text(try extract(Self.fixtures + "/2025/hotel-invoice.pdf", "application/pdf", tools: try realTools()))
        XCTAssertTrue(got.contains("Breakfast"), got)
        XCTAssertTrue(got.contains("206.60"), got)
        XCTAssertTrue(got.contains("Conference"), "page 2 is read too: \(got)")
    }

    func testABornDigitalPDFIsReadByPdftotext() throws {
        var tools = try realTools()
        tools.tesseract = nil  // no OCR needed: its text layer is read as is
        let got = text(try extract(Self.fixtures + "/2025/acme-hardware.pdf", "application/pdf", tools: tools))
        XCTAssertTrue(got.contains("Cordless drill"), got)
        XCTAssertTrue(got.contains("42.17"), got)
    }

    func testPlainTextIsTakenAsIs() throws {
        let got = text(try extract(Self.fixtures + "/2024/city-cab.txt", "text/plain", tools: try realTools()))
        XCTAssertFalse(got.isEmpty)
    }

    func testAMissingToolIsReportedWithItsDebianPackage() throws {
        let none = ExtractorTools(pdftotext: nil, pdftoppm: nil, tesseract: nil, languages: [])
        XCTAssertEqual(try extract(Self.fixtures + "/2025/acme-hardware.pdf", "application/pdf", tools: none),
                       .unavailable(tool: "pdftotext", package: "poppler-utils"))
        XCTAssertEqual(try extract(Self.fixtures + "/2025/pharmacy.png", "image/png", tools: none),
                       .unavailable(tool: "tesseract", package: "tesseract-ocr"))
    }

    func testAnUnknownLanguageIsRefusedNamingItsPackage() throws {
        XCTAssertThrowsError(try ExtractorTools.locate(searchPath: "/usr/bin:/bin", languages: ["xx"])) { error in
            XCTAssertTrue("\(error)".contains("tesseract-ocr-xx"), "\(error)")
        }
    }

    /// A tool script the test writes, standing in for tesseract.
    func fakeTool(_ folder: TemporaryFolder, _ body: String) throws -> String {
        let path = try folder.write("fake-tesseract", "#!/bin/sh\n" + body + "\n")
        XCTAssertEqual(chmod(path, 0o755), 0)
        return path
    }

    func testAToolThatHangsIsKilledAtTheTimeLimitAndRecordedAsFailed() throws {
        let folder = TemporaryFolder()
        var tools = try realTools()
        tools.tesseract = try fakeTool(folder, "exec sleep 600")
        tools.limits = ToolLimits(seconds: 1, memoryBytes: 1 << 30)
        let result = try extract(Self.fixtures + "/2025/pharmacy.png", "image/png", tools: tools)
        XCTAssertEqual(result, .failed("tesseract timed out after 1 s"))
    }

    func testAToolThatCrashesIsRecordedAsFailedWithTheSignal() throws {
        let folder = TemporaryFolder()
        var tools = try realTools()
        tools.tesseract = try fakeTool(folder, "echo 'about to crash' >&2\nkill -SEGV $$")
        guard case .failed(let reason) = try extract(Self.fixtures + "/2025/pharmacy.png", "image/png", tools: tools) else {
            return XCTFail("a crash must be a failure")
        }
        XCTAssertTrue(reason.hasPrefix("tesseract crashed (signal 11)"), reason)
    }

    func testTheMemoryLimitHoldsAToolBack() throws {
        let folder = TemporaryFolder()
        var tools = try realTools()
        // 1 MiB of address space is not enough for tesseract to even start.
        tools.limits = ToolLimits(seconds: 60, memoryBytes: 1 << 20)
        _ = folder
        guard case .failed(let reason) = try extract(Self.fixtures + "/2025/pharmacy.png", "image/png", tools: tools) else {
            return XCTFail("tesseract cannot run in 1 MiB")
        }
        XCTAssertTrue(reason.hasPrefix("tesseract"), reason)
    }
}
