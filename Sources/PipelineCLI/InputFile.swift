import Glibc

/// A command's input file mapped read-only, not read whole: a video of hundreds of MiB costs
/// only the pages its demuxer reads (a still's keyframes), and the sandbox's copy of it is made
/// by the kernel from the open descriptor (`Sandbox.run(inputFile:)`).
final class InputFile {
  let descriptor: Int32
  let count: Int
  private let base: UnsafeMutableRawPointer?

  /// nil when the file cannot be opened, read or mapped.
  init?(path: String) {
    descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    var info = stat()
    guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      close(descriptor)
      return nil
    }
    count = Int(info.st_size)
    guard count > 0 else {
      base = nil
      return
    }
    let mapped = mmap(nil, count, PROT_READ, MAP_PRIVATE, descriptor, 0)
    guard let mapped, mapped != MAP_FAILED else {
      close(descriptor)
      return nil
    }
    base = mapped
  }

  deinit {
    if let base { munmap(base, count) }
    close(descriptor)
  }

  /// The whole file as the sandbox's input source.
  var file: (descriptor: Int32, range: Range<Int>) { (descriptor, 0..<count) }

  func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    try body(UnsafeRawBufferPointer(start: base, count: count))
  }
}
