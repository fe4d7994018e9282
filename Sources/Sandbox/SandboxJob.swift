/// Work the helper runs in a child, by name: the pipeline over an image, a probe of `attachd
/// sandbox check`. The executable registers its jobs with `SandboxHelper.run`; the server asks
/// for one by name (`Sandbox.run`).
public struct SandboxJob: Sendable {
  /// The name the server asks for.
  public let name: String
  /// Done once in the helper before it locks down (load libraries, initialise codecs), so the
  /// children never need to open a file.
  public let prepare: @Sendable () -> Void
  /// Runs in the locked-down child: read `input`, write the result into `output`. A thrown or
  /// crashed job is a failed child; a job that wants to report a refusal writes it as output.
  public let run:
    @Sendable (_ input: UnsafeRawBufferPointer, _ parameters: [UInt8], _ output: inout SandboxOutput) -> Void

  public init(
    name: String, prepare: @escaping @Sendable () -> Void = {},
    run: @escaping @Sendable (UnsafeRawBufferPointer, [UInt8], inout SandboxOutput) -> Void
  ) {
    self.name = name
    self.prepare = prepare
    self.run = run
  }
}

/// Where a job writes its result: the output memory file, mapped, of a size the server chose.
/// The first 16 bytes are a header (a magic number and the payload's length), so the server
/// reads back exactly what was written, never more.
public struct SandboxOutput {
  static let magic: UInt64 = 0x6174_7461_6368_6431  // "attachd1"
  static let headerBytes = 16

  private let base: UnsafeMutableRawPointer
  /// Bytes the payload may take.
  public let capacity: Int
  /// Bytes written so far.
  public private(set) var count = 0

  init(base: UnsafeMutableRawPointer, size: Int) {
    self.base = base
    self.capacity = max(0, size - Self.headerBytes)
    base.storeBytes(of: Self.magic.littleEndian, as: UInt64.self)
    base.storeBytes(of: UInt64(0), toByteOffset: 8, as: UInt64.self)
  }

  /// Appends `bytes`; false (nothing written) when they do not fit.
  @discardableResult
  public mutating func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard bytes.count <= capacity - count else { return false }
    if let source = bytes.baseAddress, !bytes.isEmpty {
      (base + Self.headerBytes + count).copyMemory(from: source, byteCount: bytes.count)
    }
    count += bytes.count
    base.storeBytes(of: UInt64(count).littleEndian, toByteOffset: 8, as: UInt64.self)
    return true
  }

  @discardableResult
  public mutating func append(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { append($0) } }
}
