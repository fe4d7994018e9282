import Foundation

extension PostgresIndex {
  public func beginIdempotent(
    tenant: String, key: String, fingerprint: String, now: Date, lifetime: TimeInterval, lease: TimeInterval
  ) throws -> IdempotencyBegin {
    try pool.withConnection { connection in
      // The claim is one INSERT … ON CONFLICT: of many nodes racing on one key exactly one
      // inserts (or takes over a stale claim). The others read what is there; a claim
      // abandoned between the two statements sends them round once more.
      // A running claim of a node that is gone (its liveness lock ended with its session) is
      // taken over at once on the next round, as its lease would have let it be later.
      var goneNode: String?
      for _ in 0..<3 {
        let claimed = try connection.query(
          .claimIdempotent,
          [
            .text(tenant), .text(key), .text(fingerprint), .integer(Self.seconds(now)),
            .integer(Self.leaseEnd(now, lease)), .real(lifetime), nodeName.map(PostgresValue.text) ?? .null,
            goneNode.map(PostgresValue.text) ?? .null,
          ])
        if claimed.first != nil { return .started }
        guard let row = try connection.query(.readIdempotent, [.text(tenant), .text(key)]).first else {
          continue
        }
        guard row.text(0) == fingerprint else { return .mismatch }
        if row.text(1) == "running", goneNode == nil, let holder = row.text(5), holder != nodeName,
          !isInstanceAlive(holder)
        {
          goneNode = holder
          continue
        }
        guard row.text(1) == "done" else { return .inProgress }
        return .completed(
          StoredResponse(
            status: row.int(2), headers: StoredHeaders.decode(row.text(3) ?? ""), body: row.bytes(4) ?? []))
      }
      throw StorageError(.busy, "idempotency key kept changing while it was being claimed")
    }
  }

  public func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws {
    let changed = try query(
      .completeIdempotent,
      [
        .text(tenant), .text(key), .integer(Int64(response.status)),
        .text(StoredHeaders.encode(response.headers)), .bytes(response.body),
      ]
    ).affected
    guard changed == 1 else { throw StorageError(.notFound, "no running idempotency claim to complete") }
  }

  public func abandonIdempotent(tenant: String, key: String) throws {
    try query(.abandonIdempotent, [.text(tenant), .text(key)])
  }

  public func purgeIdempotent(createdBefore cutoff: Date) throws -> Int {
    // In batches, each claiming rows no other node is deleting, so that two sweeping nodes
    // neither wait on each other nor count a key twice.
    let batch = 1_000
    var purged = 0
    while true {
      let deleted = try query(.purgeIdempotent, [.integer(Self.seconds(cutoff)), .integer(Int64(batch))])
        .affected
      purged += deleted
      if deleted < batch { return purged }
    }
  }
}
