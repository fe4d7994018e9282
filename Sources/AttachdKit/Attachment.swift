import Foundation

/// One stored attachment: the server's `Record` (`GET /openapi.json`,
/// `components.schemas.Record`). `AttachmentSchemaTests` keeps the two equal.
public struct Attachment: Codable, Sendable, Equatable {
  /// The image the server received, before it normalised it.
  public struct Source: Codable, Sendable, Equatable {
    public let format: String
    public let width: Int
    public let height: Int
    public let bytes: Int
    public let orientation: Int
    public let orientationSource: String?
    public let colourProfile: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
      case format, width, height, bytes, orientation
      case orientationSource = "orientation_source"
      case colourProfile = "colour_profile"
    }
  }

  /// One model profile's rendition: its size always, its bytes once it is made.
  public struct ProfileImage: Codable, Sendable, Equatable {
    public let width: Int
    public let height: Int
    public let estimatedTokens: Int?
    public let url: String
    public let bytes: Int?
    public let sha256: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
      case width, height, url, bytes, sha256
      case estimatedTokens = "estimated_tokens"
    }
  }

  /// A video's facts (the record's `video`): upright size, rates, HDR, turn, audio, and what
  /// each provider would be charged for it.
  public struct Video: Codable, Sendable, Equatable {
    public let duration: Double
    public let width: Int
    public let height: Int
    public let frameRate: Double?
    public let averageFrameRate: Double?
    public let variableFrameRate: Bool
    public let hdr: String
    /// Degrees clockwise, then mirrored left to right when `mirrored`.
    public let rotation: Int
    public let mirrored: Bool
    public let codec: String
    public let audio: Bool
    public let toneMapped: Bool
    public let posterTime: Double
    /// By provider (`anthropic`, `openai`, `gemini`).
    public let estimatedTokens: [String: Int]
    /// The MP4 for providers that take video, made after the upload's answer.
    public let mp4: MP4

    enum CodingKeys: String, CodingKey, CaseIterable {
      case duration, width, height, hdr, rotation, mirrored, codec, audio, mp4
      case frameRate = "frame_rate"
      case averageFrameRate = "average_frame_rate"
      case variableFrameRate = "variable_frame_rate"
      case toneMapped = "tone_mapped"
      case posterTime = "poster_time"
      case estimatedTokens = "estimated_tokens"
    }
  }

  /// A video's MP4: `processing` (its `url` answers 503 with `Retry-After`), `ready` (with its
  /// size and hash) or `failed` (with a code).
  public struct MP4: Codable, Sendable, Equatable {
    public let state: String
    public let code: String?
    public let url: String
    public let width: Int?
    public let height: Int?
    public let bytes: Int?
    public let sha256: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
      case state, code, url, width, height, bytes, sha256
    }
  }

  /// One of a video's frames (`GET url` answers its JPEG).
  public struct Frame: Codable, Sendable, Equatable {
    public let url: String
    public let signedURL: String?
    /// Seconds from the start.
    public let time: Double
    public let width: Int
    public let height: Int
    public let bytes: Int
    public let sha256: String
    /// The frame for each provider that takes images (`anthropic`, `openai`, `gemini`), sized
    /// by its rule; `GET` its `url` for that JPEG.
    public let profiles: [String: FrameProfile]?

    enum CodingKeys: String, CodingKey, CaseIterable {
      case url, time, width, height, bytes, sha256, profiles
      case signedURL = "signed_url"
    }
  }

  /// A frame as one provider's image rule sizes it.
  public struct FrameProfile: Codable, Sendable, Equatable {
    public let width: Int
    public let height: Int
    public let estimatedTokens: Int?
    public let url: String

    enum CodingKeys: String, CodingKey, CaseIterable {
      case width, height, url
      case estimatedTokens = "estimated_tokens"
    }
  }

  public let id: String
  public let url: String
  public let contentType: String
  public let width: Int
  public let height: Int
  public let bytes: Int
  public let sha256: String
  public let source: Source
  /// RFC 3339 timestamps, kept as the server wrote them.
  public let createdAt: String
  public let expiresAt: String
  public let owner: String?
  public let signedURL: String?
  public let profile: String
  public let estimatedTokens: Int?
  public let profiles: [String: ProfileImage]
  /// `image` or `video` (a video's top level describes its poster frame).
  public let kind: String
  /// A video's facts; nil for an image.
  public let video: Video?
  /// A video's frames in order; nil for an image.
  public let frames: [Frame]?

  enum CodingKeys: String, CodingKey, CaseIterable {
    case id, url, width, height, bytes, sha256, source, owner, profile, profiles, kind, video, frames
    case contentType = "content_type"
    case createdAt = "created_at"
    case expiresAt = "expires_at"
    case signedURL = "signed_url"
    case estimatedTokens = "estimated_tokens"
  }
}

/// The names the JSON of each type uses, for the schema test.
extension Attachment {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
extension Attachment.Source {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
extension Attachment.ProfileImage {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
extension Attachment.Video {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
extension Attachment.MP4 {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
extension Attachment.Frame {
  public static let jsonKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue))
}
