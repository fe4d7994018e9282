/// The messages between the server and its sandbox helper, over a `SOCK_SEQPACKET` socket (one
/// message per `send`, never split or merged). Little-endian, length-prefixed, small: the bytes
/// of an image never travel here, only the descriptors of the memory files that hold them.
enum SandboxWire {
  /// Server → helper.
  enum Request: Equatable {
    /// Run `job` in a new child over the input and output memory files sent with the message.
    case run(id: UInt64, job: String, parameters: [UInt8])
    /// Kill the child of request `id` (its deadline passed, or its client left).
    case kill(id: UInt64)
  }

  /// Helper → server.
  enum Reply: Equatable {
    /// The helper is locked down and takes requests; which layers are in force.
    case ready(SandboxLayers)
    /// The child of request `id` ended.
    case finished(id: UInt64, SandboxExit)
  }

  static let runTag: UInt8 = 1
  static let killTag: UInt8 = 2
  static let readyTag: UInt8 = 3
  static let finishedTag: UInt8 = 4
  /// The largest message either side sends.
  static let maximumMessage = 4096

  static func encode(_ request: Request) -> [UInt8] {
    var out = WireWriter()
    switch request {
    case .run(let id, let job, let parameters):
      out.byte(runTag)
      out.u64(id)
      out.bytes(Array(job.utf8))
      out.bytes(parameters)
    case .kill(let id):
      out.byte(killTag)
      out.u64(id)
    }
    return out.buffer
  }

  static func decodeRequest(_ bytes: [UInt8]) throws(SandboxError) -> Request {
    var reader = WireReader(bytes)
    switch try reader.byte() {
    case runTag:
      let id = try reader.u64()
      let job = String(decoding: try reader.bytes(), as: UTF8.self)
      return .run(id: id, job: job, parameters: try reader.bytes())
    case killTag: return .kill(id: try reader.u64())
    default: throw .protocolViolation("unknown request")
    }
  }

  static func encode(_ reply: Reply) -> [UInt8] {
    var out = WireWriter()
    switch reply {
    case .ready(let layers):
      out.byte(readyTag)
      layers.write(to: &out)
    case .finished(let id, let exit):
      out.byte(finishedTag)
      out.u64(id)
      exit.write(to: &out)
    }
    return out.buffer
  }

  static func decodeReply(_ bytes: [UInt8]) throws(SandboxError) -> Reply {
    var reader = WireReader(bytes)
    switch try reader.byte() {
    case readyTag: return .ready(try SandboxLayers(from: &reader))
    case finishedTag:
      let id = try reader.u64()
      return .finished(id: id, try SandboxExit(from: &reader))
    default: throw .protocolViolation("unknown reply")
    }
  }
}

/// Appends little-endian fields (the sandbox's messages, and the jobs' own parameters and
/// results).
public struct WireWriter {
  public var buffer: [UInt8] = []

  public init() {}

  public mutating func byte(_ value: UInt8) { buffer.append(value) }

  public mutating func u32(_ value: UInt32) {
    for shift in stride(from: 0, to: 32, by: 8) { buffer.append(UInt8(truncatingIfNeeded: value >> shift)) }
  }

  public mutating func u64(_ value: UInt64) {
    for shift in stride(from: 0, to: 64, by: 8) { buffer.append(UInt8(truncatingIfNeeded: value >> shift)) }
  }

  public mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

  /// A length-prefixed byte string.
  public mutating func bytes(_ value: [UInt8]) {
    u32(UInt32(value.count))
    buffer += value
  }

  public mutating func string(_ value: String) { bytes(Array(value.utf8)) }
}

/// Reads what `WireWriter` wrote; any short read is a protocol violation.
public struct WireReader {
  private let buffer: [UInt8]
  private var offset = 0

  public init(_ buffer: [UInt8]) { self.buffer = buffer }

  public var isAtEnd: Bool { offset == buffer.count }

  public mutating func byte() throws(SandboxError) -> UInt8 {
    guard offset < buffer.count else { throw .protocolViolation("message too short") }
    defer { offset += 1 }
    return buffer[offset]
  }

  public mutating func u32() throws(SandboxError) -> UInt32 {
    var value: UInt32 = 0
    for shift in stride(from: 0, to: 32, by: 8) { value |= UInt32(try byte()) << shift }
    return value
  }

  public mutating func u64() throws(SandboxError) -> UInt64 {
    var value: UInt64 = 0
    for shift in stride(from: 0, to: 64, by: 8) { value |= UInt64(try byte()) << shift }
    return value
  }

  public mutating func i64() throws(SandboxError) -> Int64 { Int64(bitPattern: try u64()) }

  public mutating func bytes() throws(SandboxError) -> [UInt8] {
    let count = Int(try u32())
    guard count <= buffer.count - offset else { throw .protocolViolation("field past the message") }
    defer { offset += count }
    return Array(buffer[offset..<(offset + count)])
  }

  public mutating func string() throws(SandboxError) -> String {
    String(decoding: try bytes(), as: UTF8.self)
  }
}
