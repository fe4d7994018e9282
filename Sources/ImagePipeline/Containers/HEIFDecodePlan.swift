import ImageContainers

/// Everything a decoder needs to turn a HEIF file's primary image into pixels, read from the
/// boxes alone: which coded images to decode (byte ranges into the input, never copies), how
/// they fit together (a grid), how the result is cropped, rotated and mirrored, its colour, and
/// its alpha. `path` says whether our HEVC fast path or libheif decodes it.
public struct HEIFDecodePlan: Sendable {
  /// The `pitm` item.
  public var primaryItemID: UInt32
  /// The primary item's type (`hvc1`, `grid`, `iden`, `av01`, …).
  public var primaryItemType: FourCC
  /// The image whose pixels are decoded: the primary, or the item a primary `iden` (or `tmap`)
  /// derives from, followed to its end.
  public var image: HEIFImagePlan
  /// Transformative properties to apply after decoding, in order: the source's in its `ipma`
  /// order, then each deriving item's (an `iden`'s own `irot`/`imir`/`clap` come last).
  public var transforms: [HEIFTransform]
  /// `colr` of the primary (nclx and/or ICC), else of the image it derives from, else of the
  /// first grid tile (as libheif does).
  public var colour: [HEIFBoxInfo.Colour]
  /// Bits per channel from `pixi`, when present.
  public var bitsPerChannel: [Int]?
  /// The alpha auxiliary image (`auxl` + `auxC` alpha URN), decoded like the primary.
  public var alpha: HEIFAlphaPlan?
  /// Other auxiliary images of the primary: depth, Apple HDR gain map, mattes …
  public var auxiliaries: [HEIFAuxiliaryImage]
  /// ISO 21496-1 tone-map (`tmap`) items that derive from the primary (HDR renditions).
  public var toneMaps: [UInt32]
  /// Thumbnail items of the primary (`thmb`).
  public var thumbnails: [HEIFThumbnail]
  /// Where the primary's colour channels are decoded, and why.
  public var path: HEIFDecodePath
  /// Facts worth a log line that change nothing (an `ispe` that disagrees with the coded size …).
  public var notes: [String]
  /// Essential properties of the primary and the items it derives from that the HEVC path does
  /// not implement (libheif does).
  public var derivationProperties: [FourCC] = []

  /// The size the decoded image is expected to have before any transform: the coded size read
  /// from the HEVC sequence parameter set when there is one, else `ispe`; a grid's output size.
  public var storedSize: HEIFSize { image.expectedSize }

  /// The bytes libheif's copy of the file gets so that it decodes the layers `a1op`/`lsel`
  /// select (see `AV1LayerSelection`), for the image and its alpha.
  var layerSelectionWrites: [AV1LayerSelection.Write] {
    (image.codedItems + (alpha?.image.codedItems ?? [])).flatMap { $0.layerSelection?.writes ?? [] }
  }

  /// The upright size after every transform, for `storedSize`.
  public var displaySize: HEIFSize {
    geometry(width: storedSize.width, height: storedSize.height).displaySize
  }
}

/// A width and height in pixels.
public struct HEIFSize: Sendable, Equatable, CustomStringConvertible {
  public var width: Int
  public var height: Int

  public init(width: Int, height: Int) {
    self.width = width
    self.height = height
  }

  public var description: String { "\(width)x\(height)" }
}

/// One image to decode: a single coded item or a grid of them.
public struct HEIFImagePlan: Sendable {
  public enum Content: Sendable {
    case coded(HEIFCodedItem)
    case grid(ImageGrid)
    /// A derived image this reader does not take apart (`iovl`): libheif composes it.
    case other
  }

  public var itemID: UInt32
  public var itemType: FourCC
  public var isHidden: Bool
  /// The item's `ispe`, when it has one.
  public var ispe: HEIFSize?
  public var content: Content

  /// The size the decoder must produce: for a coded item its SPS size (else `ispe`), for a grid
  /// its output size.
  public var expectedSize: HEIFSize {
    switch content {
    case .coded(let item): return item.expectedSize
    case .grid(let grid): return grid.outputSize
    case .other: return ispe ?? HEIFSize(width: 0, height: 0)
    }
  }

  /// Every coded item in decoding order (one, or the tiles in `dimg` order).
  public var codedItems: [HEIFCodedItem] {
    switch content {
    case .coded(let item): return [item]
    case .grid(let grid): return grid.tiles
    case .other: return []
    }
  }

  public var grid: ImageGrid? {
    if case .grid(let grid) = content { return grid }
    return nil
  }

  /// Whether the image is one plane of grey: every coded item is monochrome.
  public var isMonochrome: Bool { !codedItems.isEmpty && codedItems.allSatisfy(\.isMonochrome) }

  /// Whether a decoded frame of `size` is what coded item `index` (of `codedItems`) must give:
  /// a grid tile exactly `tileSize`, a single image exactly `expectedSize` (its SPS size). Any
  /// other frame fails the decode as corrupt: pasting or resizing it would distort the picture.
  public func acceptsDecodedFrame(_ size: HEIFSize, atIndex index: Int) -> Bool {
    guard index >= 0, index < codedItems.count else { return false }
    switch content {
    case .coded(let item): return size == item.expectedSize
    case .grid(let grid): return size == grid.tileSize
    case .other: return false
    }
  }
}

/// A coded image item (`hvc1`, `av01`, …): where its bitstream is and how it is configured.
public struct HEIFCodedItem: Sendable {
  public var itemID: UInt32
  public var itemType: FourCC
  public var isHidden: Bool
  /// The item's `ispe`.
  public var ispe: HEIFSize?
  /// The item's data: byte ranges into the input, in order (one range in almost every file;
  /// several for a multi-extent `iloc` entry; inside `idat` for construction method 1).
  public var data: [Range<Int>]
  /// `hvcC` of an `hvc1` item; nil for other codecs or when it is missing or unreadable.
  public var hevc: HEVCConfiguration?
  /// Why `hevc` is nil for an `hvc1` item.
  public var hevcProblem: String?
  /// Essential properties of the item that no decoder here implements.
  public var unknownEssentialProperties: [FourCC]
  /// `av1C` of an `av01` item, when it is readable.
  public var av1: AV1Configuration? = nil
  /// The layers an `av01` item's `a1op`/`lsel` select, when it has either.
  var layerSelection: AV1LayerSelection? = nil

  /// Whether the item codes one plane: HEVC chroma format 0, or an AV1 `mono_chrome` stream.
  public var isMonochrome: Bool { hevc?.chromaFormat == 0 || av1?.monochrome == true }

  /// The size the decoder will produce: the SPS size (after its conformance window) when the
  /// SPS could be read, else `ispe`, else 0×0.
  public var expectedSize: HEIFSize {
    hevc?.sequence?.size ?? ispe ?? HEIFSize(width: 0, height: 0)
  }

  /// Total bytes of the item's data.
  public var dataCount: Int { data.reduce(0) { $0 + $1.count } }

  /// Lends the item's data in `input` (read in place, e.g. a spooled body's mapping) to
  /// `body`; copied only when it is split over several extents.
  public func withBytes<Value, Failure: Error>(
    in input: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Value
  ) throws(Failure) -> Value {
    if data.count == 1, let only = data.first {
      return try body(UnsafeRawBufferPointer(rebasing: input[only]))
    }
    var joined: [UInt8] = []
    joined.reserveCapacity(dataCount)
    for range in data { joined.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[range])) }
    // `withUnsafeBytes` rethrows untyped: the typed error goes through a Result.
    let outcome: Result<Value, Failure> = joined.withUnsafeBytes { bytes in
      do throws(Failure) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try outcome.get()
  }
}

/// A `grid` derived image: `rows` × `columns` tiles of one size, placed left to right, top to
/// bottom, cut to `outputSize`.
public struct ImageGrid: Sendable {
  public var rows: Int
  public var columns: Int
  /// The grid's `output_width` × `output_height` (16- or 32-bit fields).
  public var outputSize: HEIFSize
  /// The tiles in `dimg` order (row-major).
  public var tiles: [HEIFCodedItem]
  /// The size every decoded tile must have: the tiles' common coded size.
  public var tileSize: HEIFSize
  /// Whether every tile has byte-identical `hvcC` (one decoder configuration serves them all).
  public var sharesConfiguration: Bool

  /// Where tile `index` (row-major) goes in the output, clipped to it.
  public func placement(ofTile index: Int) -> (x: Int, y: Int, width: Int, height: Int) {
    let x = (index % columns) * tileSize.width
    let y = (index / columns) * tileSize.height
    return (
      x, y, max(0, min(tileSize.width, outputSize.width - x)),
      max(0, min(tileSize.height, outputSize.height - y))
    )
  }
}

/// A transformative property of the primary (or of an image it derives from).
public enum HEIFTransform: Sendable, Equatable {
  /// `irot`: rotate anti-clockwise by 0, 90, 180 or 270 degrees.
  case rotateCCW(Int)
  /// `imir` axis 0: top and bottom exchange (libheif ≥ 1.15, ISO/IEC 23008-12:2022).
  case mirrorVertical
  /// `imir` axis 1: left and right exchange.
  case mirrorHorizontal
  /// `clap`: keep the clean aperture, centred on the image centre plus an offset.
  case cleanAperture(HEIFCleanAperture)
}

/// The rational fields of a `clap` box.
public struct HEIFCleanAperture: Sendable, Equatable {
  public var widthN: UInt32
  public var widthD: UInt32
  public var heightN: UInt32
  public var heightD: UInt32
  public var horizontalOffsetN: Int32
  public var horizontalOffsetD: UInt32
  public var verticalOffsetN: Int32
  public var verticalOffsetD: UInt32
}

/// The alpha plane's image and how it combines with the colour channels.
public struct HEIFAlphaPlan: Sendable {
  public var image: HEIFImagePlan
  /// A `prem` reference: the colour channels are premultiplied by this alpha.
  public var premultiplied: Bool
  /// Whether its expected size equals the colour image's (libheif ignores alpha otherwise).
  public var matchesImageSize: Bool
}

/// An auxiliary image of the primary other than alpha (not decoded by the pipeline).
public struct HEIFAuxiliaryImage: Sendable, Equatable {
  public enum Kind: String, Sendable {
    case depth
    case appleHDRGainMap = "apple-hdr-gain-map"
    case other
  }

  public var itemID: UInt32
  public var itemType: FourCC
  public var kind: Kind
  /// The `auxC` URN.
  public var urn: String
  public var ispe: HEIFSize?
}

/// A `thmb` item of the primary.
public struct HEIFThumbnail: Sendable, Equatable {
  public var itemID: UInt32
  public var itemType: FourCC
  public var ispe: HEIFSize?
}
