import XCTest
final class PlaceholderReceiptCatalogTests: XCTestCase { func testBuilds() {} }
