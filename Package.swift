// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "receipt",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "receipt", targets: ["receipt"]),
        // For the fuzz targets in Fuzz/ (a separate package); the ordinary build does not change.
        .library(name: "BlobStore", targets: ["BlobStore"]),
        .library(name: "ReceiptWire", targets: ["ReceiptWire"]),
        .library(name: "ReceiptVault", targets: ["ReceiptVault"]),
        .library(name: "WebForms", targets: ["WebForms"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(name: "CSHA", path: "Sources/CSHA", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLZMA", path: "Sources/CLZMA", pkgConfig: "liblzma",
                       providers: [.apt(["liblzma-dev"])]),
        .target(name: "CFileOps", path: "Sources/CFileOps"),
        // SQLite's process-wide settings, for the executable alone.
        .target(name: "CSQLitePolicy", dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")],
                path: "Sources/CSQLitePolicy"),

        .target(name: "BlobStore", dependencies: ["CSHA", "CLZMA", "CFileOps"], swiftSettings: strict),
        .target(name: "ReceiptCatalog", dependencies: [
            // ReceiptWire for the one declaration of a receipt's fields (ReceiptFields, ReadableFields).
            "BlobStore", "ReceiptWire", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ], swiftSettings: strict),
        // How an export lays out its files (names, manifest.csv, the claim package, the zip), written once
        // for the vault's `export` and the server's web download.
        .target(name: "ReceiptExportLayout", dependencies: [
            "BlobStore", "ReceiptCatalog", "ReceiptWire", "MediaTypes",
            .product(name: "CSV", package: "CSV.swift"),
            .product(name: "ZIPFoundation", package: "ZIPFoundation"),
        ], swiftSettings: strict),
        .target(name: "ReceiptVault", dependencies: [
            "BlobStore", "ReceiptCatalog", "CFileOps", "ReceiptText", "ReceiptWire", "MediaTypes", "ReceiptExportLayout",
            .product(name: "Mustache", package: "swift-mustache"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "CSV", package: "CSV.swift"),
        ], swiftSettings: strict),
        .target(name: "ReceiptWire", swiftSettings: strict),
        // The web view's parsers of what a browser sends as text (the list's query, form fields,
        // multipart headers, Origin): no HTTP framework, so the fuzz targets build without one.
        .target(name: "WebForms", dependencies: ["ReceiptWire"], swiftSettings: strict),
        // Media type <-> extension <-> magic bytes, one table; no dependencies.
        .target(name: "MediaTypes", swiftSettings: strict),
        // Text extraction through child processes (pdftotext, pdftoppm, tesseract); no GRDB.
        .target(name: "ReceiptText", swiftSettings: strict),
        .target(name: "ReceiptSync", dependencies: [
            "BlobStore", "ReceiptCatalog", "ReceiptVault", "ReceiptWire", "ReceiptText",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "X509", package: "swift-certificates"),
        ], swiftSettings: strict),
        .target(name: "ReceiptServer", dependencies: [
            "BlobStore", "ReceiptCatalog", "ReceiptExportLayout", "ReceiptWire", "ReceiptText", "MediaTypes", "WebForms",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Mustache", package: "swift-mustache"),
            .product(name: "MultipartKit", package: "multipart-kit"),
        ], swiftSettings: strict),
        .target(name: "ReceiptInbox", dependencies: ["BlobStore", "CFileOps", "ReceiptCatalog", "ReceiptVault"],
                swiftSettings: strict),
        .target(name: "ReceiptCommands", dependencies: [
            "BlobStore", "CFileOps", "CSQLitePolicy", "ReceiptCatalog", "ReceiptVault", "ReceiptSync", "ReceiptServer", "ReceiptInbox",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // SwiftPM exports every symbol of an executable (61,000 of this one) to the dynamic linker;
        // nothing looks them up, and each process paid for them at start (~2 ms of every command).
        .executableTarget(name: "receipt", dependencies: ["ReceiptCommands", "CFileOps", "CSQLitePolicy"], swiftSettings: strict,
                          linkerSettings: [.unsafeFlags(["-Xlinker", "--no-export-dynamic"])]),

        .target(name: "TestSupport", dependencies: ["BlobStore"], path: "Tests/TestSupport",
                swiftSettings: strict),
        .testTarget(name: "BlobStoreTests", dependencies: ["BlobStore", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ReceiptTextTests", dependencies: ["ReceiptText", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ReceiptCatalogTests", dependencies: [
            "ReceiptCatalog", "TestSupport", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ],
                    swiftSettings: strict),
        .testTarget(name: "ReceiptVaultTests", dependencies: [
            "ReceiptVault", "ReceiptCatalog", "BlobStore", "TestSupport", "ReceiptText", "MediaTypes", .product(name: "GRDB", package: "GRDB.swift"),
        ],
                    swiftSettings: strict),
        .testTarget(name: "ReceiptCommandsTests", dependencies: [
            "ReceiptCommands", "ReceiptVault", "BlobStore", "TestSupport",
            .product(name: "ZIPFoundation", package: "ZIPFoundation"),
        ],
                    swiftSettings: strict),
        // Replays every input the fuzz targets in Fuzz/ ever crashed on (Fuzz/regressions/) through
        // the same checks, without the fuzzer.
        .testTarget(name: "FuzzRegressionTests", dependencies: ["BlobStore", "ReceiptVault", "ReceiptWire", "WebForms"],
                    swiftSettings: strict),
        .testTarget(name: "ReceiptSyncTests", dependencies: [
            "ReceiptSync", "ReceiptServer", "ReceiptCommands", "TestSupport", "WebForms",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: strict),
        // Every route the server's router knows, probed by role (Tests/ReceiptServerTests).
        .testTarget(name: "ReceiptServerTests", dependencies: [
            "ReceiptServer", "ReceiptWire", "BlobStore", "TestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
        ], swiftSettings: strict),
    ]
)
