// swift-tools-version:6.0
import PackageDescription

// C libraries from Debian 12, one system-library target each. Only ImageCodecs imports the
// image libraries; Storage imports SQLite, libpq and libcurl; Crypto imports libcrypto.
func systemLibrary(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
  .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
  name: "attachd",
  platforms: [.macOS(.v14)],
  products: [
    .executable(name: "attachd", targets: ["attachd"]),
    .library(name: "HTTP", targets: ["HTTP"]),
    .library(name: "ImagePipeline", targets: ["ImagePipeline"]),
  ],
  targets: [
    systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: ["libturbojpeg0-dev"]),
    // libheif for the HEIFs the fast path declines (AVIF, …). Headers only: DelayLoad opens it
    // when the first libheif context is made (not linked).
    systemLibrary("CHeif", pkgConfig: nil, apt: ["libheif-dev"]),
    systemLibrary("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
    systemLibrary("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
    systemLibrary("CWebP", pkgConfig: "libwebpdemux", apt: ["libwebp-dev"]),
    // giflib ships no pkg-config file on Debian 12; its header is in /usr/include.
    systemLibrary("CGIF", pkgConfig: nil, apt: ["libgif-dev"]),
    systemLibrary("CLCMS2", pkgConfig: "lcms2", apt: ["liblcms2-dev"]),
    // FFmpeg's HEVC decoder for HEIF tiles; libavutil holds its frames, buffers and log.
    // Headers only: DelayLoad opens libavcodec when the first HEVC decoder does (not linked).
    systemLibrary("CAVCodec", pkgConfig: nil, apt: ["libavcodec-dev", "libavutil-dev"]),
    systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
    // libpq and libcurl: headers only, loaded on first use by DelayLoad (not linked).
    systemLibrary("CPQ", pkgConfig: nil, apt: ["libpq-dev"]),
    systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
    // The S3 client: HTTP(S), connection reuse and SigV4 signing (Debian 12: curl 7.88).
    systemLibrary("CCurl", pkgConfig: nil, apt: ["libcurl4-openssl-dev"]),
    // epoll, eventfd, sendfile, accept4: Linux headers the Glibc module leaves out.
    .systemLibrary(name: "CLinux"),

    // Protocol only: bytes in, messages out. No sockets, no Foundation networking.
    .target(name: "HTTP"),
    // Sockets: epoll event loop, connections, worker pool, graceful shutdown.
    .target(name: "Server", dependencies: ["HTTP", "CLinux"]),
    // The only code that touches the C image libraries. Optimised even in debug builds, like
    // ImagePipeline: its colour conversion loop is vector code, ~40x slower unoptimised.
    .target(
      name: "ImageCodecs",
      dependencies: [
        "CTurboJPEG", "CHeif", "CZlib", "CPNG", "CWebP", "CGIF", "CLCMS2", "CAVCodec", "DelayLoad",
      ],
      swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // Pure Swift steps: sniff, limits, container parsers, orient, resize, verify.
    // Optimised even in debug builds: the pixel loops (resize, rotate, flatten) are ~50x slower
    // unoptimised, which would put a single corpus photo over a minute in `swift test`.
    .target(
      name: "ImagePipeline", dependencies: ["ImageCodecs", "PixelKernels"],
      swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // AVX2 versions of ImagePipeline's hottest loops, chosen at run time (C: Swift cannot ask for
    // AVX2 in one function). Optimised in debug builds too.
    .target(name: "PixelKernels", cSettings: [.unsafeFlags(["-O2"])]),
    // SHA-256, HMAC, random ids, constant-time comparison (libcrypto).
    .target(name: "Crypto", dependencies: ["CCrypto"]),
    // Content-addressed blobs (files or S3) + SQLite or PostgreSQL index, behind protocols.
    .target(name: "Storage", dependencies: ["CSQLite", "DelayLoad", "Crypto"]),
    // libcurl, libpq and libavcodec opened when the S3 store, the PostgreSQL index or the first
    // HEVC decoder needs them.
    .target(name: "DelayLoad", dependencies: ["CPQ", "CCurl", "CAVCodec", "CHeif"]),
    // The durable upload engine and the three ways a body reaches it: plain (in memory or
    // spooled), the IETF resumable-upload draft and tus 1.0, side by side. What it needs of the
    // App (the pipeline behind a complete body, the error table) comes through `UploadHost`.
    .target(name: "Uploads", dependencies: ["HTTP", "Server", "Storage", "Crypto"]),
    // Configuration, routes, auth, metrics, logs, wiring.
    // The OpenAPI description is compiled into the binary (served at /openapi.json): one file in
    // the repository, nothing to ship beside the executable.
    .target(
      name: "App", dependencies: ["HTTP", "Server", "ImagePipeline", "Storage", "Crypto", "Uploads"],
      resources: [.embedInCode("OpenAPI/openapi.json")]),
    // ImageCodecs: the hidden `bench-hevc` benchmark command calls HEVCDecoder directly.
    .executableTarget(name: "attachd", dependencies: ["App", "ImagePipeline", "ImageCodecs"]),

    // Shared by the test targets: corpus location, temp dirs, live-server helpers.
    .target(name: "TestSupport", path: "Tests/TestSupport"),
    // One test client, two modes: in-process (any `HTTPHandler`, no socket) and live (HTTP/1.1
    // to a running server).
    .target(name: "AttachdTesting", dependencies: ["HTTP", "Server"], path: "Tests/AttachdTesting"),
    .testTarget(name: "HTTPTests", dependencies: ["HTTP", "TestSupport"]),
    .testTarget(name: "ServerTests", dependencies: ["Server", "HTTP", "TestSupport", "AttachdTesting"]),
    .testTarget(name: "ImageCodecsTests", dependencies: ["ImageCodecs", "TestSupport"]),
    .testTarget(name: "ImagePipelineTests", dependencies: ["ImagePipeline", "TestSupport"]),
    .testTarget(name: "StorageTests", dependencies: ["Storage", "Crypto", "TestSupport"]),
    .testTarget(name: "UploadsTests", dependencies: ["Uploads", "TestSupport"]),
    .testTarget(name: "AppTests", dependencies: ["App", "Uploads", "TestSupport", "AttachdTesting"]),
  ]
)
