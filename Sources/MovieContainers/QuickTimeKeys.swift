import ImageContainers

/// QuickTime's `moov/meta` key-value metadata (`hdlr` `mdta`, `keys`, `ilst`), as iPhones write
/// it: `keys` lists the names, `ilst` holds one box per key, typed by the key's 1-based index,
/// with a `data` box inside. Only a named key is looked up: nothing else of it is kept.
enum QuickTimeKeys {
  /// The UTF-8 value of `key` in a `meta` box, or nil.
  static func value(_ r: ByteReader, meta: ISOBox, key: String) -> String? {
    // QuickTime's `meta` has no version and flags; ISO's does. Either way `hdlr` comes first.
    let start = r.fourCC(meta.body + 4) == FourCC("hdlr") ? meta.body : meta.body + 4
    guard let boxes = try? ISOBoxes.children(r, from: start, to: meta.end),
      let keys = boxes.first(where: { $0.type == FourCC("keys") }),
      let list = boxes.first(where: { $0.type == FourCC("ilst") }),
      let index = index(of: Array(key.utf8), r, keys)
    else { return nil }
    guard let items = try? ISOBoxes.children(r, from: list.body, to: list.end),
      let item = items.first(where: { $0.type.value == index }),
      let data = (try? ISOBoxes.children(r, from: item.body, to: item.end))?.first(where: {
        $0.type == FourCC("data")
      }),
      r.u32(data.body) == 1,  // well-known type 1: UTF-8
      let bytes = r.slice(data.body + 8, data.end - data.body - 8)
    else { return nil }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The 1-based index of `name` in a `keys` box.
  private static func index(of name: [UInt8], _ r: ByteReader, _ keys: ISOBox) -> UInt32? {
    guard let count = r.u32(keys.body + 4) else { return nil }
    var offset = keys.body + 8
    for index in 1...max(1, min(Int(count), 4096)) {
      guard let size = r.u32(offset), size >= 8, r.has(offset, Int(size)), offset + Int(size) <= keys.end
      else {
        return nil
      }
      if Int(size) - 8 == name.count, r.matches(offset + 8, name) { return UInt32(index) }
      offset += Int(size)
    }
    return nil
  }
}
