// swift-tools-version:6.0
// libFuzzer targets for receipt's parsers of untrusted input. A separate package so that the main
// package's ordinary build never compiles them; `tools/fuzz` builds them with
// -sanitize=fuzzer,address and runs each for a bounded time.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

func fuzzTarget(_ name: String) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzChecks", "CFuzzerDriver"], swiftSettings: strict)
}

let package = Package(
    name: "receipt-fuzz",
    dependencies: [.package(name: "receipt", path: "..")],
    targets: [
        // The checks themselves (a link to Tests/FuzzRegressionTests/Checks): the main package's
        // FuzzRegressionTests replays every kept crash through the same code without the fuzzer.
        .target(name: "FuzzChecks", dependencies: [
            .product(name: "BlobStore", package: "receipt"),
            .product(name: "ReceiptVault", package: "receipt"),
            .product(name: "ReceiptWire", package: "receipt"),
            .product(name: "WebForms", package: "receipt"),
        ], swiftSettings: strict),
        .target(name: "CFuzzerDriver"),
        fuzzTarget("FuzzManifest"),
        fuzzTarget("FuzzBundle"),
        fuzzTarget("FuzzWire"),
        fuzzTarget("FuzzNames"),
        fuzzTarget("FuzzXZ"),
        fuzzTarget("FuzzWebForm"),
    ]
)
