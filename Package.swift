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
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AASA", targets: ["AASA"]),
        .executable(name: "aasad", targets: ["aasad"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Linux calls Swift's Glibc module does not expose (epoll, eventfd, accept4, malloc_trim).
        .target(name: "CAASALinux"),
        // libssl and libcrypto (OpenSSL 3) with wrappers for their macros.
        .systemLibrary(name: "CAASAOpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // libnghttp2 for HTTP/2, driven through its memory API.
        .systemLibrary(name: "CAASANghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // zlib, to gzip served files once at load time.
        .systemLibrary(name: "CAASAZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libcurl (the OpenSSL flavour), the maintained HTTPS client the ACME client speaks through.
        .systemLibrary(name: "CAASACurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The event loop: epoll, sockets, timers. No knowledge of HTTP.
        .target(name: "Reactor", dependencies: ["CAASALinux"], swiftSettings: swiftSettings),
        // The HTTP vocabulary every layer shares (methods, statuses, field names, prepared header
        // fields in both framings) and byte-level field parsing (dates, validators, Host). No I/O.
        .target(name: "HTTPCore", swiftSettings: swiftSettings),
        // A strict, bounded HTTP/1.1 request parser. No I/O.
        .target(name: "HTTP1", dependencies: ["HTTPCore"], swiftSettings: swiftSettings),
        // The one-shot SHA-256 (libcrypto), for every module that hashes bytes, and names too long
        // for a file name written as a digest.
        .target(name: "Hashing", dependencies: ["CAASAOpenSSL"], swiftSettings: swiftSettings),
        // OpenSSL contexts, SNI, ALPN, connections, the development certificate.
        .target(name: "TLS", dependencies: ["CAASAOpenSSL", "Hashing"], swiftSettings: swiftSettings),
        // HTTP/2 sessions over libnghttp2: frames in and out, requests collected, responses sent.
        .target(name: "HTTP2", dependencies: ["CAASANghttp2", "HTTPCore"], swiftSettings: swiftSettings),
        // The server: workers, connections, routing and responses over HTTP/1.1 (and TLS).
        .target(
            name: "HTTPServer",
            dependencies: [
                "Reactor", "HTTPCore", "HTTP1", "HTTP2", "TLS", "Served", "SafeText",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Text from outside made safe to print (TerminalText), UTF-8 validation, base64url. No I/O.
        .target(name: "SafeText", swiftSettings: swiftSettings),
        // The strict RFC 8259 parser (order, duplicates and source locations kept), shared by the
        // AASA validator, the ACME client and `aasad check`. No I/O.
        .target(name: "StrictJSON", dependencies: ["SafeText"], swiftSettings: swiftSettings),
        // Pure AASA model: parser, validator, URL matcher. No I/O.
        .target(name: "AASA", dependencies: ["StrictJSON", "SafeText"], swiftSettings: swiftSettings),
        // What is served: the snapshot of sites (host names to sites), each site's prepared files,
        // fallback answers and certificate files. Built by SiteStore, read by HTTPServer per request.
        .target(
            name: "Served",
            dependencies: [
                "AASA", "SafeText", "Hashing", "HTTPCore", "CAASAZlib",
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // The config directory: site discovery, loading and validating every site, host ownership.
        .target(
            name: "SiteStore",
            dependencies: [
                "Served", "AASA", "SafeText", "Hashing", "HTTPCore", "Reactor", "CAASAOpenSSL",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // The one outbound HTTPS client (libcurl), shared by ACME, `aasad check` and the CDN watch:
        // verification always on, no redirect followed, timeouts, bounded responses.
        .target(name: "Outbound", dependencies: ["CAASACurl", "CAASAOpenSSL", "TLS"], swiftSettings: swiftSettings),
        // `aasad check` and the CDN watch: a deployed host as Apple's fetcher sees it (origin file,
        // certificate, Apple's CDN copy compared as JSON), and an app's associated domains.
        .target(
            name: "Check",
            dependencies: ["AASA", "StrictJSON", "SafeText", "Hashing", "Outbound", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        // The ACME client (RFC 8555): hostile-input parsers for what a CA sends, JWS over the account
        // key, the back-off schedule, the shared storage directory's locks, HTTPS through libcurl;
        // orders to the issued certificate, checked. TLS for its certificate name rules and OpenSSL helpers.
        .target(
            name: "ACME",
            dependencies: [
                "StrictJSON", "SafeText", "Hashing", "HTTPCore", "Reactor", "TLS", "Outbound", "CAASAOpenSSL", "CAASALinux",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The daemon as a library: the settings schema (file, AASAD_* variables, serve's flags),
        // the composition of server, registry, watcher, certificates, CDN watch, admin and metrics,
        // live settings, in-place upgrade, privileges and systemd notification.
        .target(
            name: "Daemon",
            dependencies: [
                .product(name: "HashTreeCollections", package: "swift-collections"),
                "AASA", "HTTPCore", "SiteStore", "TLS", "HTTPServer", "Reactor", "ACME", "Check", "Outbound", "TenantAPI",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // The tenant API (docs/api.md): sites created, replaced and removed over HTTPS, written
        // into the config directory as a person would, checked as `aasad validate` checks them;
        // its own listener (HTTP/1.1, TLS, bounds), tokens with scopes.
        .target(
            name: "TenantAPI",
            dependencies: [
                "SiteStore", "Served", "AASA", "StrictJSON", "SafeText", "Hashing", "HTTPCore", "HTTP1", "Reactor", "TLS",
                "CAASAOpenSSL", "CAASALinux", "Outbound",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // The tenant API's client: arguments checked by the API's own rules, one request through
        // Outbound, the answer read; `aasad site` prints it.
        .target(
            name: "TenantClient",
            dependencies: ["TenantAPI", "Outbound", "SiteStore", "StrictJSON", "SafeText", .product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings),
        // The commands: serve (the daemon's flags and signals), validate, match, sites, check, site.
        .executableTarget(
            name: "aasad",
            dependencies: [
                "Daemon",
                "TenantClient",
                "AASA",
                "HTTPCore",
                "SiteStore",
                "TLS",
                "HTTPServer",
                "Reactor",
                "ACME",
                "Check",
                "Outbound",
                "SafeText",
                "StrictJSON",
                "LibFuzzerDriver",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // The tenant API's fuzz targets (scripts/fuzz.sh tokens and api): the tokens file needs
        // Yams, so SwiftPM builds them, with -sanitize=fuzzer and -D FUZZ_TENANT; an ordinary
        // build makes a binary that only says so.
        .executableTarget(
            name: "aasad-tenant-fuzz", dependencies: ["TenantAPI", "LibFuzzerDriver"], path: "Fuzz/Tenant", swiftSettings: swiftSettings),
        // The libFuzzer shim both of the above use in their fuzzing builds (empty otherwise).
        .target(name: "LibFuzzerDriver", swiftSettings: swiftSettings),
        // Helpers for test targets only: fuzz corpus replay, temporary directories, loopback
        // connections, readiness polling, command line tools.
        .target(
            name: "TestSupport", dependencies: [.product(name: "Logging", package: "swift-log")], path: "Tests/TestSupport",
            swiftSettings: swiftSettings),
        .testTarget(name: "AASATests", dependencies: ["AASA", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "StrictJSONTests", dependencies: ["StrictJSON"], swiftSettings: swiftSettings),
        .testTarget(name: "SafeTextTests", dependencies: ["SafeText", "StrictJSON"], swiftSettings: swiftSettings),
        .testTarget(name: "HashingTests", dependencies: ["Hashing"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPCoreTests", dependencies: ["HTTPCore", "TestSupport"], exclude: ["Fixtures"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "HTTPCore", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "HTTPCore", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: [
                "HTTPServer", "HTTPCore", "HTTP2", "Reactor", "Served", "SiteStore", "TLS", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "ACMETests",
            dependencies: [
                "ACME", "CAASALinux", "StrictJSON", "Hashing", "SafeText", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "ReactorTests", dependencies: ["Reactor"], swiftSettings: swiftSettings),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "SiteStoreTests",
            dependencies: [
                "SiteStore", "Served", "AASA", "HTTPCore", "Hashing", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "TenantAPITests",
            dependencies: [
                "TenantAPI", "SiteStore", "Hashing", "HTTPCore", "SafeText", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "TenantClientTests", dependencies: ["TenantClient", "Outbound", "StrictJSON", "TestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "ACME", "Daemon", "HTTPServer", "SiteStore", "TenantAPI", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // A daemon in-process on loopback for tests (as HummingbirdTesting is for Hummingbird): a
        // config directory in a temporary folder, the shared test keys, real clients, waits on
        // the daemon's own events.
        .target(
            name: "DaemonTesting", dependencies: ["Daemon", "TestSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/DaemonTesting", swiftSettings: swiftSettings),
        // What `aasad serve` does, tested on a daemon in this process (no signals, no exit status);
        // the binary only for the commands a test compares serve with.
        .testTarget(
            name: "DaemonServeTests", dependencies: ["DaemonTesting", "Daemon", "TestSupport", "aasad"], swiftSettings: swiftSettings),
        .testTarget(
            name: "aasadTests",
            dependencies: ["aasad", "Daemon", "Check", "Outbound", "Reactor", "TestSupport"],
            exclude: ["Fixtures", "Golden"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
