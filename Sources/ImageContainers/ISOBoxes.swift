/// One box of an ISO base media file (HEIF, AVIF, MP4, QuickTime): where its header, payload and
/// end are, as absolute offsets into the bytes it was read from.
package struct ISOBox: Sendable, Equatable {
  package let type: FourCC
  /// Offset of the box header.
  package let offset: Int
  /// Offset of the payload (after size/type/largesize, before any FullBox version).
  package let body: Int
  package let end: Int

  package init(type: FourCC, offset: Int, body: Int, end: Int) {
    self.type = type
    self.offset = offset
    self.body = body
    self.end = end
  }
}

/// A box that does not fit in its parent (or a header cut short); the reason names the box.
package struct ISOBoxError: Error, Equatable {
  package let reason: String
  /// The offset of the box that did not fit.
  package let offset: Int
}

/// Iterates the boxes of an ISO base media file, bounded by their parent: every box must fit.
/// The one box walker that the HEIF reader and the movie reader share.
package enum ISOBoxes {
  /// The boxes in `[start, end)`, at most `max` of them; throws at the first box that does not
  /// fit. A size of 0 means "to the end of the parent", as the format allows.
  package static func children(_ r: ByteReader, from start: Int, to end: Int, max: Int = .max)
    throws(ISOBoxError)
    -> [ISOBox]
  {
    var result: [ISOBox] = []
    var offset = start
    while offset < end && result.count < max {
      let box = try box(r, at: offset, parentEnd: end)
      result.append(box)
      offset = box.end
    }
    return result
  }

  /// The box whose header starts at `offset` inside a parent ending at `parentEnd`.
  package static func box(_ r: ByteReader, at offset: Int, parentEnd end: Int) throws(ISOBoxError) -> ISOBox {
    guard end - offset >= 8, let size32 = r.u32(offset), let type = r.fourCC(offset + 4) else {
      throw ISOBoxError(reason: "truncated box header", offset: offset)
    }
    var header = 8
    var size = UInt64(size32)
    if size32 == 1 {
      guard let large = r.u64(offset + 8) else {
        throw ISOBoxError(reason: "truncated largesize", offset: offset)
      }
      size = large
      header = 16
    } else if size32 == 0 {
      size = UInt64(end - offset)
    }
    guard size >= UInt64(header), size <= UInt64(end - offset) else {
      throw ISOBoxError(reason: "box \(type) size \(size) does not fit", offset: offset)
    }
    return ISOBox(type: type, offset: offset, body: offset + header, end: offset + Int(size))
  }
}
