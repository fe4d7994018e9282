import Crypto
import Foundation

/// Checks a captured request's AWS Signature Version 4 the way S3 does, from the specification
/// and independently of the client's code: its own percent-encoding (Foundation's), its own
/// canonical request and HMAC chain. SeaweedFS is more lenient than AWS; this is not.
struct SigV4Verifier {
  let accessKeyId: String
  let secretAccessKey: String
  let region: String

  /// Why the request would be refused, or nil when AWS would accept its signature.
  ///
  /// `key` and `query` are what the request was meant to address: the verifier derives the
  /// canonical URI and query from them itself and requires the request target to be exactly
  /// those (what was signed is what was sent).
  func problem(
    with request: ScriptedHTTPServer.Request, bucket: String, key: String?, query: [(String, String)] = []
  ) -> String? {
    let canonicalURI = "/\(bucket)" + (key.map { "/" + Self.encode($0, keepingSlash: true) } ?? "")
    let encoded: [(name: String, value: String)] = query.map {
      (Self.encode($0.0, keepingSlash: false), Self.encode($0.1, keepingSlash: false))
    }
    let sorted = encoded.sorted { $0.name == $1.name ? $0.value < $1.value : $0.name < $1.name }
    let canonicalQuery = sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    let expectedTarget = canonicalURI + (canonicalQuery.isEmpty ? "" : "?" + canonicalQuery)
    guard request.target == expectedTarget else {
      return "target \(request.target) is not the canonical \(expectedTarget)"
    }
    guard let authorization = request.header("authorization"), authorization.hasPrefix("AWS4-HMAC-SHA256 ")
    else { return "no SigV4 Authorization header" }
    var fields: [String: String] = [:]
    for part in authorization.dropFirst("AWS4-HMAC-SHA256 ".count).components(separatedBy: ", ") {
      let pair = part.split(separator: "=", maxSplits: 1)
      if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
    }
    guard let credential = fields["Credential"], let signedHeaders = fields["SignedHeaders"],
      let signature = fields["Signature"], let amzDate = request.header("x-amz-date"),
      let payloadHash = request.header("x-amz-content-sha256")
    else { return "Authorization lacks a field, or x-amz-date / x-amz-content-sha256 is missing" }
    let date = String(amzDate.prefix(8))
    let scope = "\(date)/\(region)/s3/aws4_request"
    guard credential == "\(accessKeyId)/\(scope)" else { return "credential scope \(credential)" }
    let names = signedHeaders.split(separator: ";").map(String.init)
    for required in ["host", "x-amz-content-sha256", "x-amz-date"] where !names.contains(required) {
      return "\(required) is not signed"
    }
    var canonicalHeaders = ""
    for name in names {
      guard let value = request.header(name) else { return "signed header \(name) was not sent" }
      let collapsed = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
      canonicalHeaders += "\(name):\(collapsed)\n"
    }
    let canonicalRequest = [
      request.method, canonicalURI, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash,
    ].joined(separator: "\n")
    let stringToSign = [
      "AWS4-HMAC-SHA256", amzDate, scope, Hex.encode(SHA256.hash(canonicalRequest)),
    ].joined(separator: "\n")
    var signingKey = HMACSHA256.authenticate(date, key: Array("AWS4\(secretAccessKey)".utf8))
    for step in [region, "s3", "aws4_request"] { signingKey = HMACSHA256.authenticate(step, key: signingKey) }
    let expected = Hex.encode(HMACSHA256.authenticate(stringToSign, key: signingKey))
    return expected == signature ? nil : "signature \(signature) is not the expected \(expected)"
  }

  /// RFC 3986 percent-encoding by Foundation: everything but unreserved (and `/` in paths).
  static func encode(_ text: String, keepingSlash: Bool) -> String {
    var allowed = CharacterSet(
      charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    if keepingSlash { allowed.insert("/") }
    return text.addingPercentEncoding(withAllowedCharacters: allowed)!
  }
}
