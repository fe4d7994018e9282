/// The codec libraries as a whole, for a process that must have every one in memory before it
/// gives up opening files (the decode sandbox's helper): the delay-loaded ones are opened and
/// initialised now.
public enum CodecLibraries {
  /// Opens libavcodec and libheif and initialises libheif; what could not be opened, one line
  /// each (empty when all were).
  public static func preload() -> [String] {
    [HEVCDecoder.preload(), HEIFCodec.preload()].compactMap { $0 }
  }
}
