import HTTP
import Server
import Storage

extension TusUploads {
  /// Where a chunk's bytes go.
  enum ChunkTarget: Sendable {
    /// An existing upload, at the offset the client named, optionally declaring its length.
    case upload(id: String, offset: Int, length: Int?)
    /// A new upload (creation-with-upload), made when the body is about to be read.
    case creation(Creation, location: @Sendable (String) -> String)
  }

  /// How a chunk's checksum is given.
  enum ChecksumSource: Sendable {
    /// `Upload-Checksum` in the head.
    case header(TusChecksum)
    /// `Trailer: Upload-Checksum`: the value comes after the body.
    case trailer
  }

  /// One PATCH (or creation-with-upload) as decided from its head.
  struct Chunk: Sendable {
    var target: ChunkTarget
    var checksum: ChecksumSource?
    /// `Content-Length`, when the body is not chunked.
    var declaredBytes: Int?
    /// The caller's cap on an upload (the server's or a token's `max_bytes`).
    var maxLength: Int
    /// What bytes past `maxLength` are refused with (as a plain upload would be).
    var overLimit: any Error
  }

  /// `PATCH /v1/tus/{id}`: `Upload-Offset`, `Content-Type`, optional `Upload-Length` (a deferred
  /// length declared) and `Upload-Checksum`, then the body streams into the upload.
  func patch(_ head: HTTPRequestHead, id: String, caller: UploadCaller, context: inout RequestContext)
    -> HeadDecision
  {
    let chunk: Chunk
    do {
      let offset = try TusProtocol.uploadOffset(head)
      guard TusProtocol.isOffsetStream(head) else { throw TusError.contentTypeRequired }
      let length = try TusProtocol.uploadLength(head)
      chunk = try readChunk(
        head, target: .upload(id: id, offset: offset, length: length), caller: caller, startOffset: offset)
    } catch {
      return .respond(problem(error, context))
    }
    return stream(chunk, caller: caller, context: &context)
  }

  /// A creation whose body carries the first bytes (creation-with-upload).
  func createWithUpload(
    _ head: HTTPRequestHead, creation: Creation, caller: UploadCaller,
    location: @escaping @Sendable (String) -> String, context: inout RequestContext
  ) -> HeadDecision {
    let chunk: Chunk
    do {
      chunk = try readChunk(
        head, target: .creation(creation, location: location), caller: caller, startOffset: 0)
      // A first chunk longer than the whole upload: refused before the upload is made.
      if let length = creation.length, let declared = chunk.declaredBytes, declared > length {
        throw TusError.lengthExceeded(offset: 0)
      }
    } catch {
      return .respond(problem(error, context))
    }
    return stream(chunk, caller: caller, context: &context)
  }

  /// The checksum and size rules shared by PATCH and creation-with-upload.
  func readChunk(_ head: HTTPRequestHead, target: ChunkTarget, caller: UploadCaller, startOffset: Int) throws
    -> Chunk
  {
    var checksum: ChecksumSource?
    if let text = try TusProtocol.single(head, "Upload-Checksum", or: .invalidChecksum) {
      checksum = .header(try TusChecksum(parsing: text))
    } else if TusProtocol.announcesChecksumTrailer(head) {
      checksum = .trailer
    }
    let maxLength = caller.maxBytes
    let overLimit = caller.overLimit(maxLength, serverLimit: uploads.configuration.maxUploadBytes)
    var declared: Int?
    if case .contentLength(let length) = head.framing {
      // Past the caller's cap whatever the upload: refused before a byte is read.
      guard length <= UInt64(maxLength), startOffset + Int(length) <= maxLength else { throw overLimit }
      declared = Int(length)
    }
    return Chunk(
      target: target, checksum: checksum, declaredBytes: declared, maxLength: maxLength, overLimit: overLimit)
  }

  /// Takes an upload slot (the caller's cap on uploads in flight, held by the request) and reads
  /// the body: streamed into the upload, or held until its checksum is verified.
  func stream(_ chunk: Chunk, caller: UploadCaller, context: inout RequestContext) -> HeadDecision {
    if let refusal = uploads.takeSlot(caller, context: &context) { return .respond(refusal.response) }
    let request = UploadRequest(
      caller: caller, requestID: context.requestID, idempotencyKey: nil, maxBodyBytes: chunk.maxLength,
      overLimit: chunk.overLimit)
    let delegate = TusChunkDelegate(tus: self, chunk: chunk, request: request)
    if let checksum = chunk.checksum {
      return .readBody(TusChecksumConsumer(tus: self, delegate: delegate, checksum: checksum))
    }
    return .readBody(uploads.engine.consumer(delegate: delegate))
  }
}
