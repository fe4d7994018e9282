/// Errors the App module raises itself (routing, readiness, reads).
public enum AppError: Error, Sendable, Equatable {
  /// No route has this path.
  case notFound
  /// The path exists, but not for this method.
  case methodNotAllowed(allow: [String])
  /// Storage cannot take writes; `reason` goes to the log only.
  case notReady(reason: String)
  /// The data directory's volume is full; `reason` goes to the log only.
  case volumeFull(reason: String)
  /// The server is shutting down and takes no new work.
  case draining
  /// A `Range` outside the image of `size` bytes (416).
  case rangeNotSatisfiable(size: Int)
  /// A `profile` query parameter that names no model profile (400).
  case unknownProfile
  /// A `frame` query parameter that is not a frame number (400).
  case invalidFrame
  /// A video's MP4 asked for before a worker made it (503 + `Retry-After`).
  case videoProcessing
  /// A video's MP4 that could not be made (422; the job's code goes to the record).
  case videoRenditionFailed
}
