import XCTest
final class PlaceholderBlobStoreTests: XCTestCase { func testBuilds() {} }
