import Glibc
import SandboxShims
import SystemCalls

/// A memory file (`memfd`) handed to a child: its input, written here and sealed so nothing can
/// change it afterwards, or its output, sized here and read back once the child has ended.
final class MemoryFile {
  private(set) var descriptor: Int32
  let size: Int

  /// A sealed file holding `contents`.
  init(name: String, contents: UnsafeRawBufferPointer) throws(SandboxError) {
    descriptor = SandboxShims_memfd(name)
    guard descriptor >= 0 else { throw .system("memfd_create", errno) }
    size = contents.count
    var written = 0
    while written < contents.count {
      let n = write(descriptor, contents.baseAddress! + written, contents.count - written)
      if n < 0 {
        if errno == EINTR { continue }
        let code = errno
        close()
        throw .system("write to a memory file", code)
      }
      written += n
    }
    guard SandboxShims_sealAll(descriptor) == 0 else {
      let code = errno
      close()
      throw .system("fcntl(F_ADD_SEALS)", code)
    }
  }

  /// A sealed file holding `range` of the open file `source`, copied by the kernel (`sendfile`):
  /// the bytes never pass through this process's memory, so a 300 MB video costs the server no
  /// resident pages.
  init(name: String, copying source: Int32, range: Range<Int>) throws(SandboxError) {
    descriptor = SandboxShims_memfd(name)
    guard descriptor >= 0 else { throw .system("memfd_create", errno) }
    size = range.count
    do { try SystemCall.copyFile(from: source, range: range, to: descriptor) } catch {
      close()
      throw .system("sendfile to a memory file", error.errno)
    }
    guard SandboxShims_sealAll(descriptor) == 0 else {
      let code = errno
      close()
      throw .system("fcntl(F_ADD_SEALS)", code)
    }
  }

  /// An empty file of `size` bytes (pages are only allocated where the child writes).
  init(name: String, size: Int) throws(SandboxError) {
    descriptor = SandboxShims_memfd(name)
    guard descriptor >= 0 else { throw .system("memfd_create", errno) }
    self.size = size
    guard ftruncate(descriptor, off_t(size)) == 0 else {
      let code = errno
      close()
      throw .system("ftruncate", code)
    }
  }

  deinit { close() }

  func close() {
    if descriptor >= 0 { Glibc.close(descriptor) }
    descriptor = -1
  }

  /// The payload a job wrote (`SandboxOutput`): checked against the header and the file's size,
  /// which the child cannot have changed (it could only write into its mapping).
  func readPayload() throws(SandboxError) -> [UInt8] {
    guard size >= SandboxOutput.headerBytes else { throw .protocolViolation("output file too small") }
    guard let base = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), base != MAP_FAILED else {
      throw .system("mmap output", errno)
    }
    defer { munmap(base, size) }
    let magic = UInt64(littleEndian: base.loadUnaligned(as: UInt64.self))
    let length = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    guard magic == SandboxOutput.magic else { throw .protocolViolation("output without its header") }
    guard length <= UInt64(size - SandboxOutput.headerBytes) else {
      throw .protocolViolation("output length past the file")
    }
    return Array(UnsafeRawBufferPointer(start: base + SandboxOutput.headerBytes, count: Int(length)))
  }
}
