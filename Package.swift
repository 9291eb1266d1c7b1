// swift-tools-version:6.0
import PackageDescription

/// Settings every target shares: Swift 6 language mode, and imports that are internal unless a
/// file says `public import` (a dependency's type in our public API is then a visible decision).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "aasad",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "AASA", targets: ["AASA"]),
        .executable(name: "aasad", targets: ["aasad"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
    ],
    targets: [
        // Linux calls Swift's Glibc module does not expose (epoll, eventfd, timerfd, accept4).
        .target(name: "CAASALinux"),
        // The event loop: epoll, sockets, timers. No knowledge of HTTP.
        .target(name: "Reactor", dependencies: ["CAASALinux"], swiftSettings: swiftSettings),
        // A strict, bounded HTTP/1.1 request parser. No I/O.
        .target(name: "HTTP1", swiftSettings: swiftSettings),
        // Pure AASA model: strict JSON, parser, validator, URL matcher. No I/O.
        .target(name: "AASA", swiftSettings: swiftSettings),
        // The config directory: host names, site discovery, loading and validating every site.
        .target(name: "SiteStore", dependencies: ["AASA"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "aasad",
            dependencies: [
                "AASA",
                "SiteStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "AASATests", dependencies: ["AASA"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1"], swiftSettings: swiftSettings),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor"], swiftSettings: swiftSettings),
        .testTarget(name: "SiteStoreTests", dependencies: ["SiteStore", "AASA"], swiftSettings: swiftSettings),
        .testTarget(
            name: "aasadTests",
            dependencies: ["aasad"],
            exclude: ["Fixtures", "Golden"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
