import XCTest
final class PlaceholderReceiptCommandsTests: XCTestCase { func testBuilds() {} }
