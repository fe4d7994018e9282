private import CPQ
private import DelayLoadPQ
import Foundation
import SystemCalls

/// A value bound to a statement parameter: always sent apart from the SQL text, never spliced in.
enum PostgresValue: Sendable, Hashable {
  case text(String)
  case integer(Int64)
  case real(Double)
  case bytes([UInt8])
  case null
}

/// A named statement, prepared on a connection the first time that connection runs it.
///
/// Every statement the index runs is a static member of `PostgresStatement` (see
/// `PostgresStatement+Index.swift`); names are unique, and `all` lists them for the test that
/// prepares each against the current schema.
struct PostgresStatement: Sendable, Hashable {
  let name: String
  let sql: String

  init(_ name: String, _ sql: String) {
    self.name = name
    self.sql = sql
  }
}

/// One libpq connection, used by one thread at a time (the pool hands it out).
///
/// All I/O is non-blocking and waits in `poll` with a deadline, so a server that stops
/// answering (stopped, frozen, unplugged) costs a caller at most the configured timeout: the
/// connection is then marked broken and the pool replaces it.
final class PostgresConnection: @unchecked Sendable {
  private let handle: OpaquePointer
  private let url: PostgresURL
  private var prepared: Set<String> = []
  /// How long to wait for the server's answer to one statement.
  let responseTimeout: Duration
  /// True once the connection is unusable (lost, timed out, protocol out of step).
  private(set) var isBroken = false
  /// The SQLSTATE of the last statement that failed on the server.
  private(set) var lastSQLState: String?

  /// Connects with `parameters`, giving up (`.unavailable`) after `timeout`.
  init(
    parameters: [(String, String)], url: PostgresURL, timeout: Duration, responseTimeout: Duration
  ) throws {
    self.url = url
    self.responseTimeout = responseTimeout
    let deadline = ContinuousClock.now + timeout
    let keywords = parameters.map { strdup($0.0) } + [nil]
    let values = parameters.map { strdup($0.1) } + [nil]
    defer { for pointer in keywords + values { free(pointer) } }
    let started = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordList in
      values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueList in
        // expand_dbname = 1: the first "dbname" value is the URI, taken apart by libpq.
        PQconnectStartParams(keywordList.baseAddress, valueList.baseAddress, 1)
      }
    }
    guard let started else { throw StorageError(.unavailable, "PostgreSQL connect: out of memory") }
    handle = started
    guard PQstatus(handle) != CONNECTION_BAD else { throw connectFailure() }
    var polling = PGRES_POLLING_WRITING
    while polling != PGRES_POLLING_OK {
      switch polling {
      case PGRES_POLLING_READING: try wait(for: Int16(POLLIN), until: deadline, doing: "connect")
      case PGRES_POLLING_WRITING: try wait(for: Int16(POLLOUT), until: deadline, doing: "connect")
      default: throw connectFailure()
      }
      polling = PQconnectPoll(handle)
    }
    CPQ_silenceNotices(handle)
    // Non-blocking sends: a large parameter (a stored response body) never blocks in write(2).
    guard PQsetnonblocking(handle, 1) == 0 else { throw connectFailure() }
  }

  deinit { PQfinish(handle) }

  // MARK: - Statements

  /// Runs a registered statement with bound parameters; prepares it on first use.
  @discardableResult
  func query(
    _ statement: PostgresStatement, _ parameters: [PostgresValue] = [], timeout: Duration? = nil
  ) throws -> PostgresRows {
    try prepare(statement)
    do {
      return try send(statement, parameters, timeout: timeout)
    } catch  where lastSQLState == "26000" && !isBroken {
      // The server forgot the statement (DISCARD ALL by a pooler): prepare it again, once.
      prepared.remove(statement.name)
      try prepare(statement)
      return try send(statement, parameters, timeout: timeout)
    }
  }

  /// Prepares a statement on this connection unless it already is (the server infers the
  /// parameter types).
  func prepare(_ statement: PostgresStatement) throws {
    guard !prepared.contains(statement.name) else { return }
    _ = try roundTrip(doing: "prepare \(statement.name)") {
      PQsendPrepare(handle, statement.name, statement.sql, 0, nil)
    }
    prepared.insert(statement.name)
  }

  /// Runs SQL text without parameters (transaction control, schema changes); may hold several statements.
  @discardableResult
  func execute(_ sql: String, timeout: Duration? = nil) throws -> PostgresRows {
    try roundTrip(doing: "execute", timeout: timeout) { PQsendQuery(handle, sql) }
  }

  /// Runs `body` between BEGIN and COMMIT, rolling back when it throws.
  func transaction<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      if !isBroken { _ = try? execute("ROLLBACK") }
      throw error
    }
  }

  /// Whether an idle connection can be handed out: connected, outside a transaction, and
  /// silent. An idle connection has nothing to read; data or a hang-up means the server ended
  /// it (a restart sends FATAL 57P01 and closes), so it is dropped rather than tried.
  var isReusable: Bool {
    guard !isBroken, PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE else {
      return false
    }
    var probe = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
    return probe.fd >= 0 && poll(&probe, 1, 0) == 0
  }

  // MARK: - Protocol

  private func send(
    _ statement: PostgresStatement, _ parameters: [PostgresValue], timeout: Duration?
  ) throws -> PostgresRows {
    // One buffer holds every parameter's bytes; libpq copies them into its output buffer
    // before PQsendQueryPrepared returns, so the pointers need only live through the call.
    var storage: [UInt8] = [0]
    var offsets: [Int] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []
    for parameter in parameters {
      var bytes: [UInt8]?
      var format: Int32 = 0
      switch parameter {
      case .text(let value):
        guard !value.utf8.contains(0) else {
          throw StorageError(.invalidArgument, "\(statement.name): text parameter holds a NUL byte")
        }
        bytes = Array(value.utf8)
      case .integer(let value): bytes = Array(String(value).utf8)
      case .real(let value):
        guard value.isFinite else {
          throw StorageError(.invalidArgument, "\(statement.name): non-finite number")
        }
        bytes = Array("\(value)".utf8)
      case .bytes(let value):
        bytes = value
        format = 1  // binary: bytea sent as is, no escaping
      case .null: bytes = nil
      }
      if let bytes {
        offsets.append(storage.count)
        lengths.append(Int32(bytes.count))
        storage += bytes
        if format == 0 { storage.append(0) }
      } else {
        offsets.append(-1)
        lengths.append(0)
      }
      formats.append(format)
    }
    return try storage.withUnsafeBufferPointer { buffer in
      let base = UnsafeRawPointer(buffer.baseAddress!)
      let pointers: [UnsafePointer<CChar>?] = offsets.map {
        $0 < 0 ? nil : (base + $0).assumingMemoryBound(to: CChar.self)
      }
      return try roundTrip(doing: statement.name, timeout: timeout) {
        PQsendQueryPrepared(
          handle, statement.name, Int32(parameters.count), pointers, lengths, formats, 0)
      }
    }
  }

  /// Sends with `start`, flushes, and reads every result before the deadline.
  private func roundTrip(
    doing context: String, timeout: Duration? = nil, _ start: () -> Int32
  ) throws -> PostgresRows {
    guard !isBroken else {
      throw StorageError(.unavailable, "PostgreSQL \(context): connection already lost")
    }
    let deadline = ContinuousClock.now + (timeout ?? responseTimeout)
    lastSQLState = nil
    guard start() == 1 else { throw connectionFailure(context) }
    while true {
      let flushed = PQflush(handle)
      if flushed == 0 { break }
      guard flushed == 1 else { throw connectionFailure(context) }
      try wait(for: Int16(POLLIN | POLLOUT), until: deadline, doing: context)
      guard PQconsumeInput(handle) == 1 else { throw connectionFailure(context) }
    }
    var rows: PostgresRows?
    var failure: StorageError?
    while true {
      while PQisBusy(handle) == 1 {
        try wait(for: Int16(POLLIN), until: deadline, doing: context)
        guard PQconsumeInput(handle) == 1 else { throw connectionFailure(context) }
      }
      guard let result = PQgetResult(handle) else { break }
      defer { PQclear(result) }
      switch PQresultStatus(result) {
      case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
        if rows == nil { rows = PostgresRows(result) }
      default:
        if failure == nil { failure = statementFailure(result, context) }
      }
    }
    if let failure { throw failure }
    return rows ?? PostgresRows(rows: [], affected: 0)
  }

  private func wait(for events: Int16, until deadline: ContinuousClock.Instant, doing context: String) throws
  {
    while true {
      let remaining = deadline - ContinuousClock.now
      guard remaining > .zero else {
        // The server did not answer in time: it may be frozen or gone. This connection is out
        // of step with the protocol now, so it is dropped; a fresh one is made when needed.
        isBroken = true
        throw StorageError(
          .unavailable, "PostgreSQL \(context): no answer from \(url.redacted) within the timeout")
      }
      var descriptor = pollfd(fd: PQsocket(handle), events: events, revents: 0)
      guard descriptor.fd >= 0 else { throw connectionFailure(context) }
      let (seconds, attoseconds) = remaining.components
      let milliseconds = Int32(clamping: seconds * 1_000 + attoseconds / 1_000_000_000_000_000 + 1)
      let ready: Int32
      do { ready = try SystemCall.wait("poll") { poll(&descriptor, 1, milliseconds) } } catch {
        isBroken = true
        throw StorageError(.unavailable, "PostgreSQL \(context): poll failed, errno \(error.errno)")
      }
      // Zero: the time ran out or a signal interrupted the wait; the loop looks at the clock.
      if ready > 0 { return }
    }
  }

  // MARK: - Errors

  private var libpqMessage: String {
    url.scrub(String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
  }

  private func connectFailure() -> StorageError {
    isBroken = true
    let code: StorageError.Code = PQconnectionNeedsPassword(handle) == 1 ? .database : .unavailable
    return StorageError(code, "PostgreSQL connect to \(url.redacted): \(libpqMessage)")
  }

  private func connectionFailure(_ context: String) -> StorageError {
    isBroken = true
    return StorageError(.unavailable, "PostgreSQL \(context) on \(url.redacted): \(libpqMessage)")
  }

  private func statementFailure(_ result: OpaquePointer, _ context: String) -> StorageError {
    let state = PQresultErrorField(result, CPQ_diagSQLState()).map { String(cString: $0) } ?? ""
    lastSQLState = state
    let message = url.scrub(
      String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines))
    if PQstatus(handle) != CONNECTION_OK { isBroken = true }
    let code = isBroken ? .unavailable : Self.code(forSQLState: state)
    return StorageError(code, "PostgreSQL \(context): \(message) (SQLSTATE \(state))")
  }

  /// The storage error kind for a SQLSTATE (PostgreSQL's appendix A).
  static func code(forSQLState state: String) -> StorageError.Code {
    switch state {
    case "23505": .conflict  // unique_violation
    case "57014", "55P03", "40001", "40P01": .busy  // statement timeout, lock wait, serialization, deadlock
    case "57P01", "57P02", "57P03", "53300", "53200": .unavailable  // shutting down, starting, full
    case "53100": .full  // disk_full: the database server's volume; a 507 like our own
    case "XX001", "XX002": .corrupt
    default:
      switch state.prefix(2) {
      case "08": .unavailable  // connection exception
      case "22": .invalidArgument  // data exception
      default: .database
      }
    }
  }
}

/// The rows of one result as text (PostgreSQL's text output format; NULL is nil).
struct PostgresRows: Sendable {
  let rows: [[String?]]
  /// Rows an INSERT/UPDATE/DELETE changed.
  let affected: Int

  init(rows: [[String?]], affected: Int) {
    self.rows = rows
    self.affected = affected
  }

  fileprivate init(_ result: OpaquePointer) {
    let count = PQntuples(result)
    let columns = PQnfields(result)
    var rows: [[String?]] = []
    rows.reserveCapacity(Int(count))
    for row in 0..<count {
      var values: [String?] = []
      values.reserveCapacity(Int(columns))
      for column in 0..<columns {
        values.append(
          PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
      }
      rows.append(values)
    }
    self.rows = rows
    self.affected = Int(String(cString: PQcmdTuples(result))) ?? 0
  }

  var first: PostgresRow? { rows.first.map(PostgresRow.init) }
  var all: [PostgresRow] { rows.map(PostgresRow.init) }
}

/// One row's columns, converted from their text form.
struct PostgresRow: Sendable {
  let values: [String?]

  func text(_ column: Int) -> String? { values[column] }
  func integer(_ column: Int) -> Int64? { values[column].flatMap { Int64($0) } }
  func int(_ column: Int) -> Int { Int(integer(column) ?? 0) }
  func real(_ column: Int) -> Double? { values[column].flatMap { Double($0) } }
  func bool(_ column: Int) -> Bool { values[column] == "t" }

  /// A bytea column in hex output (`\x0102…`), the server's default `bytea_output`.
  func bytes(_ column: Int) -> [UInt8]? {
    guard let text = values[column] else { return nil }
    let digits = Array(text.utf8.dropFirst(2))
    guard text.hasPrefix("\\x"), digits.count % 2 == 0 else { return nil }
    func nibble(_ digit: UInt8) -> UInt8? {
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
      default: nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
      guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
    }
    return bytes
  }
}
