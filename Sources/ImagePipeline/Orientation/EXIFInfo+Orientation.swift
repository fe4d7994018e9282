import ImageContainers

extension EXIFInfo {
  /// The orientation to apply (out-of-range values count as 1).
  var orientation: Orientation { Orientation(exifValue: orientationValue) }
}
