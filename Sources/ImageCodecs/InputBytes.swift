/// Input read in place: the codecs take the bytes of a file as an `UnsafeRawBufferPointer`, so
/// a body mapped from disk (a spooled upload) is decoded without being copied into an array.
/// The `[UInt8]` overloads beside each entry point are for callers that hold an array.
extension UnsafeRawBufferPointer {
  /// The bytes as `UInt8`s, for C functions that take `const unsigned char *` (named like
  /// `Array`'s, so code written for arrays reads the same).
  func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows
    -> Result
  {
    // Binding raw bytes to UInt8 is always valid: every bit pattern is a UInt8.
    try body(bindMemory(to: UInt8.self))
  }
}

extension UnsafeRawBufferPointer {
  /// The bytes themselves (named like `Array`'s, so code written for arrays reads the same).
  func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    try body(self)
  }
}
