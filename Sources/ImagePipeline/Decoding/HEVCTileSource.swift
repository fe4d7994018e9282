import ImageCodecs
import ImageContainers

/// The coded pictures of one HEIF image — a grid's tiles or a single `hvc1` item — decoded with
/// libavcodec one at a time, each checked before it is lent out: its size must be what the plan
/// says (`acceptsDecodedFrame`), and its chroma format and bit depth those of the `hvcC` (a
/// parameter set inside a sample could announce another). One `HEVCDecoder` serves every tile
/// with the same `hvcC`.
final class HEVCTileSource {
  let image: HEIFImagePlan
  /// The stored size of the whole image: the grid's output size, or the coded picture's.
  let size: HEIFSize
  /// The size of every coded picture (the whole image for a single item).
  let tileSize: HEIFSize
  let rows: Int
  let columns: Int
  /// Chroma format and bit depth every picture must have (from the first `hvcC`).
  let chromaFormat: HEVCChromaFormat
  let bitDepth: Int
  private let input: UnsafeRawBufferPointer
  private let configuration: HEVCDecoder.Configuration
  private var decoders: [[UInt8]: HEVCDecoder] = [:]

  /// A source for `image`, whose data lies in `input`; nil unless it is a grid of `hvc1` tiles
  /// or one `hvc1` item with a readable `hvcC` (what `HEIFPathRule` sends here).
  init?(_ image: HEIFImagePlan, input: UnsafeRawBufferPointer, configuration: HEVCDecoder.Configuration) {
    guard let first = image.codedItems.first, let hevc = first.hevc else { return nil }
    switch image.content {
    case .grid(let grid):
      size = grid.outputSize
      tileSize = grid.tileSize
      rows = grid.rows
      columns = grid.columns
    case .coded(let item):
      size = item.expectedSize
      tileSize = item.expectedSize
      rows = 1
      columns = 1
    case .other:
      return nil
    }
    switch hevc.chromaFormat {
    case 0: chromaFormat = .monochrome
    case 1: chromaFormat = .yuv420
    case 2: chromaFormat = .yuv422
    default: chromaFormat = .yuv444
    }
    bitDepth = hevc.bitDepthLuma
    self.image = image
    self.input = input
    self.configuration = configuration
  }

  /// Where tile (`row`, `column`) goes in the image, clipped to it (zero-sized when it lies
  /// wholly outside, as a grid's padding tiles may).
  func placement(row: Int, column: Int) -> (x: Int, y: Int, width: Int, height: Int) {
    let x = column * tileSize.width
    let y = row * tileSize.height
    return (x, y, max(0, min(tileSize.width, size.width - x)), max(0, min(tileSize.height, size.height - y)))
  }

  /// Decodes tile (`row`, `column`) and lends its picture to `body`. A sample that does not
  /// decode, or decodes to a picture of another size or format than the plan's, is an error
  /// (`corrupt`, `truncated`, `unsupported_format`, `pixel_limit`), never pasted.
  func decode(
    row: Int, column: Int, _ body: (borrowing HEVCFrame) throws(PipelineError) -> Void
  ) throws(PipelineError) {
    let index = row * columns + column
    let items = image.codedItems
    guard index < items.count, let hevc = items[index].hevc else {
      throw .corrupt("the HEIF image has no coded picture for tile \(index)")
    }
    let record = [UInt8](UnsafeRawBufferPointer(rebasing: input[hevc.record]))
    let decoder: HEVCDecoder
    if let known = decoders[record] {
      decoder = known
    } else {
      decoder = try PipelineError.decoding {
        try HEVCDecoder(configurationRecord: record, configuration: configuration)
      }
      decoders[record] = decoder
    }
    try items[index].withBytes(in: input) { sample throws(PipelineError) in
      let expected = (chromaFormat, bitDepth)
      let (image, tileSize) = (self.image, self.tileSize)
      try PipelineError.decoding {
        try decoder.decode(sample) { frame throws in
          let format = frame.format
          guard
            image.acceptsDecodedFrame(HEIFSize(width: format.width, height: format.height), atIndex: index)
          else {
            throw PipelineError.corrupt(
              "a coded picture of the HEIF image does not have the size its headers declare",
              detail: "tile \(index) decoded to \(format.width)x\(format.height), expected \(tileSize)")
          }
          guard format.chroma == expected.0, format.bitDepth == expected.1 else {
            throw PipelineError.corrupt(
              "a coded picture of the HEIF image is not in the format its headers declare",
              detail:
                "tile \(index): \(format.chroma) \(format.bitDepth)-bit, expected \(expected.0) \(expected.1)-bit"
            )
          }
          try body(frame)
        }
      }
    }
  }
}
