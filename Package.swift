// swift-tools-version:6.0
import PackageDescription

// C libraries from Debian 12, one system-library target each. Only ImageCodecs imports the
// image libraries; Storage imports SQLite, libpq and libcurl; Crypto imports libcrypto.
func systemLibrary(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
  .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
  name: "attachd",
  platforms: [.macOS(.v14), .iOS(.v16)],
  products: [
    .executable(name: "attachd", targets: ["attachd"]),
    .library(name: "HTTP", targets: ["HTTP"]),
    .library(name: "ImagePipeline", targets: ["ImagePipeline"]),
    .library(name: "ImageContainers", targets: ["ImageContainers"]),
    .library(name: "MovieContainers", targets: ["MovieContainers"]),
    // The client an app drops in (Foundation only; no server code): see docs/client.md.
    .library(name: "AttachdKit", targets: ["AttachdKit"]),
  ],
  targets: [
    systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: ["libturbojpeg0-dev"]),
    // libheif for the HEIFs the fast path declines (AVIF, …). Headers only: DelayLoadHeif opens it
    // when the first libheif context is made (not linked).
    systemLibrary("CHeif", pkgConfig: nil, apt: ["libheif-dev"]),
    systemLibrary("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
    systemLibrary("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
    systemLibrary("CWebP", pkgConfig: "libwebpdemux", apt: ["libwebp-dev"]),
    // giflib ships no pkg-config file on Debian 12; its header is in /usr/include.
    systemLibrary("CGIF", pkgConfig: nil, apt: ["libgif-dev"]),
    systemLibrary("CLCMS2", pkgConfig: "lcms2", apt: ["liblcms2-dev"]),
    // FFmpeg's HEVC decoder for HEIF tiles; libavutil holds its frames, buffers and log.
    // Headers only: DelayLoadAVCodec opens libavcodec when the first HEVC decoder does (not linked).
    systemLibrary("CAVCodec", pkgConfig: nil, apt: ["libavcodec-dev", "libavutil-dev"]),
    systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
    // libpq and libcurl: headers only, loaded on first use by DelayLoadPQ and DelayLoadCurl (not
    // linked).
    systemLibrary("CPQ", pkgConfig: nil, apt: ["libpq-dev"]),
    systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
    // The S3 client: HTTP(S), connection reuse and SigV4 signing (Debian 12: curl 7.88).
    systemLibrary("CCurl", pkgConfig: nil, apt: ["libcurl4-openssl-dev"]),
    // epoll, eventfd, sendfile, accept4: Linux headers the Glibc module leaves out.
    .systemLibrary(name: "CLinux"),

    // The one system-call wrapper: retries EINTR, maps EAGAIN, throws errno with the call's
    // name; never retries close (swift-nio's NIOPosix/System.swift is the model).
    .target(name: "SystemCalls"),
    // Protocol only: bytes in, messages out. No sockets, no Foundation networking.
    .target(name: "HTTP"),
    // Sockets: epoll event loop, connections, worker pool, graceful shutdown.
    .target(name: "Server", dependencies: ["HTTP", "CLinux", "SystemCalls"]),
    // Container parsing in pure Swift (no C, no Foundation): the JPEG marker and PNG chunk
    // walkers, EXIF, WebP and GIF headers, read in place with bounds checks. Shared by ImageCodecs
    // and ImagePipeline, and safe to run outside a decoder sandbox. Optimised in debug builds
    // like ImagePipeline: PNG CRC checks walk the whole file.
    .target(
      name: "ImageContainers", swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // Movie containers (QuickTime, MP4) in pure Swift over ImageContainers' box walker: the
    // outline the server reads before any sample is decoded (tracks, codecs, display matrix,
    // colour, durations, data references, where metadata sits) and the limits checked on it.
    .target(
      name: "MovieContainers", dependencies: ["ImageContainers"],
      swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // Frames of a video, decoded by libavformat + libavcodec over the bytes in memory (no
    // protocol, no file), HDR tone-mapped by libavfilter: C, for the sandbox's children only.
    .target(name: "VideoFrames", dependencies: ["DelayLoadAVFormat", "DelayLoadAVCodec"]),
    // A video's stills: the outline checked, the chosen frames decoded (VideoFrames) and each made
    // a clean JPEG by the still pipeline.
    .target(
      name: "VideoPipeline", dependencies: ["ImagePipeline", "ImageCodecs", "MovieContainers", "VideoFrames"]),
    // The only code that touches the C image libraries. Optimised even in debug builds, like
    // ImagePipeline: its colour conversion loop is vector code, ~40x slower unoptimised.
    .target(
      name: "ImageCodecs",
      dependencies: [
        "CTurboJPEG", "CHeif", "CZlib", "CPNG", "CWebP", "CGIF", "CLCMS2", "CAVCodec", "DelayLoadAVCodec",
        "DelayLoadHeif", "ImageContainers", "JPEGWarnings",
      ],
      swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // Pure Swift steps: sniff, limits, HEIF container plans, orient, resize, verify.
    // Optimised even in debug builds: the pixel loops (resize, rotate, flatten) are ~50x slower
    // unoptimised, which would put a single corpus photo over a minute in `swift test`.
    .target(
      name: "ImagePipeline", dependencies: ["ImageCodecs", "ImageContainers", "PixelKernels"],
      swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    // The `process` and `inspect` commands on top of ImagePipeline: arguments, exit statuses, the
    // atomically written output and the inspection JSON.
    .target(
      name: "PipelineCLI",
      dependencies: ["ImagePipeline", "PipelineSandbox", "Sandbox", "SystemCalls", "VideoPipeline"]),
    // Every libjpeg warning of a JPEG that TurboJPEG warned about, with the MCU row it arose in,
    // for ImageCodecs' JPEG recovery rule (C: libjpeg reports errors by longjmp). Links libjpeg
    // (libjpeg62-turbo: small, no dependencies; libturbojpeg exports only its tj* API).
    .target(name: "JPEGWarnings", linkerSettings: [.linkedLibrary("jpeg")]),
    // AVX2 versions of ImagePipeline's hottest loops, chosen at run time (C: Swift cannot ask for
    // AVX2 in one function). Optimised in debug builds too.
    .target(name: "PixelKernels", cSettings: [.unsafeFlags(["-O2"])]),
    // SHA-256, HMAC, random ids, constant-time comparison (libcrypto).
    .target(name: "Crypto", dependencies: ["CCrypto"]),
    // Content-addressed blobs (files or S3) + SQLite or PostgreSQL index, behind protocols.
    .target(
      name: "Storage", dependencies: ["CSQLite", "DelayLoadCurl", "DelayLoadPQ", "Crypto", "SystemCalls"]),
    // libcurl, libpq, libavcodec and libheif opened when the S3 store, the PostgreSQL index, the
    // first HEVC decoder or the first libheif context needs them: one target per library, so a
    // module sees only the headers of the libraries it uses, on one core that opens each once.
    .target(name: "DelayLoad"),
    .target(name: "DelayLoadCurl", dependencies: ["DelayLoad", "CCurl"]),
    .target(name: "DelayLoadPQ", dependencies: ["DelayLoad", "CPQ"]),
    .target(name: "DelayLoadAVCodec", dependencies: ["DelayLoad", "CAVCodec"]),
    .target(name: "DelayLoadHeif", dependencies: ["DelayLoad", "CHeif"]),
    // libavformat + libavfilter for video, opened by the sandbox's helper (not linked).
    .target(name: "DelayLoadAVFormat", dependencies: ["DelayLoad", "DelayLoadAVCodec"]),
    // The durable upload engine and the three ways a body reaches it: plain (in memory or
    // spooled), the IETF resumable-upload draft and tus 1.0, side by side. What it needs of the
    // App (the pipeline behind a complete body, the error table) comes through `UploadHost`.
    .target(name: "Uploads", dependencies: ["HTTP", "Server", "Storage", "Crypto"]),
    // The decode sandbox: a helper process of this executable forks one locked-down child per
    // decode (rlimits, no_new_privs, seccomp that kills by default; namespaces and Landlock
    // where allowed). SandboxShims wraps the Linux calls Swift cannot make directly.
    .target(name: "SandboxShims"),
    .target(name: "Sandbox", dependencies: ["SandboxShims", "SystemCalls"]),
    // The pipeline through the sandbox: its jobs (run by the helper) and the server's side.
    .target(
      name: "PipelineSandbox",
      dependencies: ["ImagePipeline", "ImageCodecs", "Sandbox", "Crypto", "MovieContainers", "VideoPipeline"]),
    // Configuration, routes, auth, metrics, logs, wiring.
    // The OpenAPI description is compiled into the binary (served at /openapi.json): one file in
    // the repository, nothing to ship beside the executable.
    .target(
      name: "App",
      dependencies: [
        "HTTP", "Server", "ImagePipeline", "Storage", "Crypto", "SystemCalls", "Uploads", "Sandbox",
        "PipelineSandbox", "VideoPipeline", "MovieContainers",
      ],
      resources: [.embedInCode("OpenAPI/openapi.json")]),
    // ImageCodecs: the hidden `bench-hevc` benchmark command calls HEVCDecoder directly.
    .executableTarget(
      name: "attachd", dependencies: ["App", "PipelineCLI", "ImageCodecs", "Sandbox", "PipelineSandbox"]),
    // Benchmark only, never a product: `serve` with images decoded in the server process, the
    // unsandboxed side of `Scripts/bench-load --sandbox`, which builds it by name. The Dockerfile
    // builds `--product attachd` only, so no image ships it.
    .executableTarget(
      name: "attachd-bench-unsandboxed", dependencies: ["App", "Sandbox", "PipelineSandbox"],
      path: "Sources/BenchUnsandboxed"),

    // The Swift client of attachd for apps (iOS 16+) and Swift on Linux: Foundation only.
    .target(name: "AttachdKit"),

    // Shared by the test targets: corpus location, temp dirs, live-server helpers.
    .target(name: "TestSupport", path: "Tests/TestSupport"),
    // One test client, two modes: in-process (any `HTTPHandler`, no socket) and live (HTTP/1.1
    // to a running server).
    .target(name: "AttachdTesting", dependencies: ["HTTP", "Server"], path: "Tests/AttachdTesting"),
    .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls"]),
    .testTarget(name: "HTTPTests", dependencies: ["HTTP", "TestSupport"]),
    .testTarget(name: "ServerTests", dependencies: ["Server", "HTTP", "TestSupport", "AttachdTesting"]),
    .testTarget(name: "ImageContainersTests", dependencies: ["ImageContainers"]),
    .testTarget(name: "MovieContainersTests", dependencies: ["MovieContainers", "TestSupport"]),
    .testTarget(
      name: "VideoPipelineTests",
      dependencies: ["VideoPipeline", "ImagePipeline", "ImageCodecs", "TestSupport"]),
    .testTarget(name: "ImageCodecsTests", dependencies: ["ImageCodecs", "TestSupport"]),
    .testTarget(
      name: "ImagePipelineTests",
      dependencies: ["ImagePipeline", "ImageContainers", "PipelineCLI", "TestSupport"]),
    .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
    .testTarget(name: "StorageTests", dependencies: ["Storage", "Crypto", "TestSupport"]),
    .testTarget(name: "UploadsTests", dependencies: ["Uploads", "TestSupport"]),
    .testTarget(
      name: "SandboxTests", dependencies: ["Sandbox", "PipelineSandbox", "ImagePipeline", "TestSupport"]),
    // AttachdKit against the built `attachd serve` on a real port (and through HAProxy).
    .testTarget(name: "AttachdKitTests", dependencies: ["AttachdKit", "TestSupport"]),
    .testTarget(
      name: "AppTests", dependencies: ["App", "Uploads", "TestSupport", "AttachdTesting", "MovieContainers"]),
  ]
)
