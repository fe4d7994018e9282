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
]

let package = Package(
  name: "attachd-fuzz",
  dependencies: [.package(name: "attachd", path: "..")],
  targets: [.target(name: "FuzzSupport")]
    + fuzzers.map { fuzzer in
      .executableTarget(
        name: fuzzer.name,
        dependencies: ["FuzzSupport", .product(name: fuzzer.module, package: "attachd")],
        swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    }
)
