import Foundation
import TestSupport
import Testing

@testable import App

/// Two in-process attachd nodes on one S3 bucket and one PostgreSQL database of the test's own,
/// behind an HAProxy on loopback that hands requests to them in turn: the deployment
/// `docker-compose.yml` describes, with each node also reachable directly (as a client whose
/// next request the balancer sends elsewhere reaches it).
final class TwoNodeCluster {
  let backends: ScaleOutBackends
  /// Node A and node B.
  let nodes: [AttachmentServer]
  let proxy: HAProxy

  var a: AttachmentServer { nodes[0] }
  var b: AttachmentServer { nodes[1] }

  init(label: String, configure: (inout Application.Configuration) -> Void = { _ in }) throws {
    backends = try ScaleOutBackends.make(label: label)
    var started: [AttachmentServer] = []
    do {
      for _ in 0..<2 { started.append(try ScaleOutTests.node(backends, configure: configure)) }
      proxy = try HAProxy(backends: started.map(Self.port), balance: .roundRobin)
    } catch {
      for node in started { node.stop() }
      throw error
    }
    nodes = started
  }

  func stop() {
    proxy.stop()
    for node in nodes { node.stop() }
  }

  /// The port a node listens on.
  static func port(_ node: AttachmentServer) -> Int { Int(node.base.split(separator: ":").last!)! }

  /// How many requests `node` answered, by its own `/metrics`: the sum over the
  /// `attachd_http_requests_total` series whose route starts with `route`, for `method` and
  /// `status` (nil: any).
  static func answered(_ node: AttachmentServer, route: String, method: String? = nil, status: Int? = nil)
    throws -> Int
  {
    let metrics = try node.curl("/metrics", [])
    #expect(metrics.status == 200)
    let prefix = #"attachd_http_requests_total{route=""# + route
    var total = 0
    for line in String(decoding: metrics.body, as: UTF8.self).split(separator: "\n")
    where line.hasPrefix(prefix) {
      let parts = line.split(separator: " ")
      guard parts.count == 2, let value = Double(parts[1]) else { continue }
      let labels = parts[0]
      if let method, !labels.contains(#",method="\#(method)","#) { continue }
      if let status, !labels.hasSuffix(#",status="\#(status)"}"#) { continue }
      total += Int(value)
    }
    return total
  }
}
