import XCTest
final class PlaceholderReceiptVaultTests: XCTestCase { func testBuilds() {} }
