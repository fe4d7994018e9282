// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets, built only by Scripts/fuzz with `-sanitize=fuzzer,address` (libFuzzer
// supplies `main`, so these do not link in a plain build and live outside the main package).
let fuzzers: [(name: String, module: String)] = [
  ("FuzzRequestParser", "HTTP"),
  ("FuzzMultipart", "HTTP"),
  ("FuzzEXIF", "ImageContainers"),
  ("FuzzHEIFBoxes", "ImagePipeline"),
  ("FuzzHEIFDecode", "ImagePipeline"),
  ("FuzzPNGChunks", "ImageContainers"),
  ("FuzzMovieOutline", "MovieContainers"),
]

// SwiftPM names a path dependency after its directory, not its manifest: a checkout in a folder
// not called `attachd` (a worktree, a CI clone) would not have `package: "attachd"`, and one in
// a folder called `fuzz` would clash with this package. Scripts/fuzz links the checkout as
// .build/fuzz-package/attachd, whose name is always right.
let package = Package(
  name: "attachd-fuzz",
  dependencies: [.package(path: "../.build/fuzz-package/attachd")],
  targets: [.target(name: "FuzzSupport")]
    + fuzzers.map { fuzzer in
      .executableTarget(
        name: fuzzer.name,
        dependencies: ["FuzzSupport", .product(name: fuzzer.module, package: "attachd")],
        swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    }
)
