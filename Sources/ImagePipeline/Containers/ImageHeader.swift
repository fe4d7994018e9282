import ImageContainers

/// What the headers of an input say, whatever its format: the facts the checks, the decoder
/// and `inspect` need, read without decoding a pixel.
public struct ImageHeader: Sendable {
  /// The format-specific reading.
  public enum Container: Sendable {
    case jpeg(JPEGMarkerInfo)
    case png(PNGChunkInfo)
    case webp(WebPChunkInfo)
    case gif(GIFBlockInfo)
    case heif(HEIFBoxInfo)
  }

  public var format: SniffedFormat
  /// Stored size (before any orientation).
  public var width: Int
  public var height: Int
  public var container: Container
  public var exif: EXIFInfo?
  /// An ICC profile readable without inflating anything (PNG's `iCCP` is compressed: see `PNGChunkInfo`).
  public var iccProfile: [UInt8]?
  public var hasAlpha: Bool
  public var isAnimated: Bool
  /// Lossless sources (PNG, lossless WebP, GIF) are usually screenshots: encode them 4:4:4.
  public var isLosslessSource: Bool
  public var metadata: MetadataInventory
  /// The source holds only gray (a one-component JPEG, a gray or gray+alpha PNG, a monochrome
  /// HEIF/AVIF): the output is one gray component too (a third of the size of 4:4:4 RGB).
  public var isMonochrome = false

  /// Reads the headers of `bytes`, already sniffed as `format`; `limits` bound what the HEIF
  /// reader allocates (items, tiles) before it is checked in full by `SecurityChecker`.
  public static func read(_ bytes: [UInt8], format: SniffedFormat, limits: Limits = Limits())
    throws(PipelineError) -> ImageHeader
  {
    try bytes.withBytes { bytes throws(PipelineError) in try read(bytes, format: format, limits: limits) }
  }

  /// Reads the headers of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer, format: SniffedFormat, limits: Limits = Limits())
    throws(PipelineError) -> ImageHeader
  {
    switch format {
    case .jpeg:
      let info: JPEGMarkerInfo
      do { info = try JPEGMarkerWalker.read(bytes) } catch {
        switch error {
        case .truncated: throw .truncated("the JPEG ends inside its headers")
        case .noFrame: throw .corrupt("the JPEG has no frame header")
        case .notJPEG, .badSegment: throw .corrupt("the JPEG headers are malformed")
        }
      }
      return ImageHeader(
        format: format, width: info.width, height: info.height, container: .jpeg(info), exif: info.exif,
        iccProfile: info.iccProfile, hasAlpha: false, isAnimated: false, isLosslessSource: false,
        metadata: info.metadata, isMonochrome: info.components == 1)
    case .png:
      let info: PNGChunkInfo
      do { info = try PNGChunkWalker.read(bytes) } catch {
        throw .corrupt("the PNG header is malformed")
      }
      return ImageHeader(
        format: format, width: info.width, height: info.height, container: .png(info), exif: info.exif,
        iccProfile: nil, hasAlpha: info.hasAlphaChannel, isAnimated: info.isAnimated, isLosslessSource: true,
        metadata: info.metadata, isMonochrome: info.colourType == 0 || info.colourType == 4)
    case .webp:
      let info: WebPChunkInfo
      do { info = try WebPReader.read(bytes) } catch {
        throw bytes.count < 30
          ? .truncated("the WebP ends inside its header") : .corrupt("the WebP has no image")
      }
      return ImageHeader(
        format: format, width: info.width, height: info.height, container: .webp(info), exif: info.exif,
        iccProfile: info.iccProfile, hasAlpha: info.hasAlpha, isAnimated: info.isAnimated,
        isLosslessSource: info.isLossless, metadata: info.metadata)
    case .gif:
      let info: GIFBlockInfo
      do { info = try GIFHeaderReader.read(bytes) } catch {
        throw .truncated("the GIF ends inside its header")
      }
      var metadata = MetadataInventory()
      metadata.comment = info.hasComment
      metadata.otherSegments = info.hasApplicationData
      return ImageHeader(
        format: format, width: info.width, height: info.height, container: .gif(info), exif: nil,
        iccProfile: nil, hasAlpha: true, isAnimated: info.frameCount > 1, isLosslessSource: true,
        metadata: metadata)
    case .heif, .avif:
      let info: HEIFBoxInfo
      do { info = try HEIFBoxReader.read(bytes, limits: limits) } catch {
        switch error {
        case .notHEIF: throw .corrupt("the file type box is malformed")
        case .noMeta, .noPrimaryItem: throw .corrupt("the HEIF file has no primary image")
        case .badBox(let what): throw .corrupt("the HEIF boxes are malformed", detail: what)
        case .imageSequence:
          throw PipelineError(.animatedUnsupported, "HEIF image sequences (animations) are not supported")
        case .tooManyItems(let count):
          throw PipelineError(
            .tooManyItems, "the HEIF file has \(count) items (limit \(limits.maxHEIFItems))")
        }
      }
      if let refusal = info.refusal { throw PipelineError(refusal) }
      // The plan's stored size is the coded size when the SPS says it (an `ispe` can lie).
      let stored = info.plan?.storedSize ?? HEIFSize(width: info.width, height: info.height)
      return ImageHeader(
        format: format, width: stored.width, height: stored.height, container: .heif(info), exif: info.exif,
        iccProfile: info.iccProfile, hasAlpha: info.hasAlpha, isAnimated: false, isLosslessSource: false,
        metadata: info.metadata, isMonochrome: info.plan?.image.isMonochrome ?? false)
    case .empty:
      throw .empty()
    case .avifSequence:
      throw PipelineError(.animatedUnsupported, "animated AVIF (image sequences) is not supported")
    default:
      throw .unsupported(format.displayName)
    }
  }

  /// The HEIF reading, when the input is HEIF or AVIF.
  public var heif: HEIFBoxInfo? {
    if case .heif(let info) = container { return info }
    return nil
  }

  /// The JPEG reading, when the input is JPEG.
  public var jpeg: JPEGMarkerInfo? {
    if case .jpeg(let info) = container { return info }
    return nil
  }
}

extension SniffedFormat {
  /// How errors name the format.
  var displayName: String {
    switch self {
    case .pdf: return "PDF"
    case .svg: return "SVG"
    case .html: return "HTML"
    case .xml: return "XML"
    case .tiff: return "TIFF/RAW"
    case .video: return "video"
    case .bmp: return "BMP"
    case .jpegXL: return "JPEG XL"
    case .unknown: return "this data"
    default: return rawValue.uppercased()
    }
  }
}
