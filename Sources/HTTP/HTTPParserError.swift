/// Why the request parser refused the bytes; the connection must be closed afterwards.
public struct HTTPParserError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What was wrong, one case per refusal so that tests and logs can tell smuggling shapes apart.
  public enum Kind: Sendable, Equatable, CaseIterable {
    /// The request line is not `method SP request-target SP HTTP-version`.
    case invalidRequestLine
    /// `HTTP/x.y` other than 1.0 and 1.1.
    case unsupportedVersion
    /// The request line (with any leading empty lines) exceeds `maxRequestLineBytes`.
    case requestLineTooLong
    /// The field lines exceed `maxHeaderBytes`.
    case headerBlockTooLarge
    /// More than `maxHeaderFields` field lines (header or trailer section).
    case tooManyHeaderFields
    /// A field name that is empty or holds a non-token character.
    case invalidHeaderName
    /// Whitespace between a field name and its colon (RFC 9112 §5.1).
    case whitespaceBeforeColon
    /// A field value with a control character (NUL, DEL, …).
    case invalidHeaderValue
    /// A line starting with whitespace: obsolete line folding (RFC 9112 §5.2).
    case obsoleteLineFolding
    /// A CR not followed by LF in the head, a chunk line or the trailers.
    case bareCR
    /// A LF not preceded by CR in the head, a chunk line or the trailers.
    case bareLF
    /// An HTTP/1.1 request without `Host`, or with more than one (RFC 9112 §3.2).
    case invalidHost
    /// Both `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1).
    case contentLengthWithTransferEncoding
    /// A `Content-Length` that is not 1*DIGIT (`+5`, `5,6` with different values, junk, overflow).
    case invalidContentLength
    /// Several `Content-Length` values that differ.
    case conflictingContentLength
    /// `Transfer-Encoding` whose final coding is not `chunked`, or `chunked` more than once.
    case chunkedNotFinal
    /// A transfer coding other than `chunked` (gzip, deflate, …), or a malformed coding list.
    case unsupportedTransferCoding
    /// A `Transfer-Encoding` list that is empty or holds something other than tokens.
    case invalidTransferEncoding
    /// `Transfer-Encoding` in an HTTP/1.0 request (RFC 9112 §6.1: faulty framing).
    case transferEncodingInHTTP10
    /// A chunk-size that is empty or not hexadecimal, or a malformed chunk extension.
    case invalidChunkSize
    /// A chunk-size larger than 2⁶³ − 1.
    case chunkSizeOverflow
    /// A chunk-size line (size and extensions) longer than `maxChunkLineBytes`.
    case chunkLineTooLong
    /// Chunk data not followed by CRLF.
    case missingChunkDataCRLF
    /// The trailer section exceeds `maxTrailerBytes`.
    case trailersTooLarge
  }

  public var kind: Kind

  public init(_ kind: Kind) { self.kind = kind }

  /// The status code a server answers with before closing the connection.
  public var status: Int {
    switch kind {
    case .unsupportedVersion: 505
    // The request line is mostly the request-target, so "URI Too Long" tells the client most.
    case .requestLineTooLong: 414
    case .headerBlockTooLarge, .tooManyHeaderFields, .trailersTooLarge: 431
    case .unsupportedTransferCoding: 501
    default: 400
    }
  }

  public var description: String { "HTTPParserError(\(kind), status \(status))" }
}
