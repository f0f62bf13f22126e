import XCTest
final class PlaceholderReceiptSyncTests: XCTestCase { func testBuilds() {} }
