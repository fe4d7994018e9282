private import CSQLite

/// A value bound to or read from an SQL statement.
enum SQLValue: Sendable, Hashable {
  case integer(Int64)
  case real(Double)
  case text(String)
  case blob([UInt8])
  case null

  var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
  var real: Double? {
    switch self {
    case .real(let value): value
    case .integer(let value): Double(value)
    default: nil
    }
  }
  var text: String? { if case .text(let value) = self { value } else { nil } }
  var bytes: [UInt8]? {
    switch self {
    case .blob(let value): value
    case .text(let value): Array(value.utf8)
    default: nil
    }
  }
}

/// One SQLite connection with its prepared statements cached by SQL text.
///
/// Not thread-safe by itself (opened with SQLITE_OPEN_NOMUTEX): `SQLiteIndex` hands each
/// connection to one thread at a time, which is what makes the `@unchecked Sendable` true.
final class SQLiteConnection: @unchecked Sendable {
  private let handle: OpaquePointer
  private var statements: [String: OpaquePointer] = [:]
  let path: String

  init(path: String, readOnly: Bool, busyTimeoutMilliseconds: Int32) throws {
    self.path = path
    var pointer: OpaquePointer?
    let flags =
      (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    let status = sqlite3_open_v2(path, &pointer, flags, nil)
    guard status == SQLITE_OK, let pointer else {
      let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close_v2(pointer)
      throw StorageError(.database, "open \(path): \(message) (\(status))")
    }
    self.handle = pointer
    sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
  }

  deinit {
    for statement in statements.values { sqlite3_finalize(statement) }
    sqlite3_close_v2(handle)
  }

  /// Runs one or more statements that return no rows (schema, pragmas, BEGIN/COMMIT).
  func execute(_ sql: String) throws {
    let status = sqlite3_exec(handle, sql, nil, nil, nil)
    guard status == SQLITE_OK else { throw error(status, context: "exec") }
  }

  /// Runs a statement and returns all its rows, each as an array of column values.
  @discardableResult
  func query(_ sql: String, _ parameters: [SQLValue] = []) throws -> [[SQLValue]] {
    let statement = try prepared(sql)
    defer {
      sqlite3_reset(statement)
      sqlite3_clear_bindings(statement)
    }
    for (offset, parameter) in parameters.enumerated() {
      let index = Int32(offset + 1)
      let status: Int32
      switch parameter {
      case .integer(let value): status = sqlite3_bind_int64(statement, index, value)
      case .real(let value): status = sqlite3_bind_double(statement, index, value)
      case .text(let value): status = sqlite3_bind_text(statement, index, value, -1, transient)
      case .blob(let value):
        status = value.withUnsafeBytes {
          // A zero-length blob needs a non-null pointer to stay a blob rather than NULL.
          sqlite3_bind_blob(
            statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), transient)
        }
      case .null: status = sqlite3_bind_null(statement, index)
      }
      guard status == SQLITE_OK else { throw error(status, context: "bind") }
    }
    var rows: [[SQLValue]] = []
    while true {
      let status = sqlite3_step(statement)
      if status == SQLITE_DONE { break }
      guard status == SQLITE_ROW else { throw error(status, context: "step") }
      let columns = sqlite3_column_count(statement)
      var row: [SQLValue] = []
      row.reserveCapacity(Int(columns))
      for column in 0..<columns { row.append(value(statement, column)) }
      rows.append(row)
    }
    return rows
  }

  /// Runs `body` inside BEGIN IMMEDIATE … COMMIT, rolling back when it throws.
  ///
  /// IMMEDIATE takes the write lock up front, so a busy database waits in the busy handler
  /// instead of failing half-way with SQLITE_BUSY on the first write.
  func transaction<T>(_ body: () throws -> T) throws -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }

  /// The number of rows the last INSERT/UPDATE/DELETE changed.
  var changes: Int { Int(sqlite3_changes(handle)) }

  // MARK: - Internals

  // SQLITE_TRANSIENT: SQLite copies the bound bytes before the bind call returns.
  private var transient: sqlite3_destructor_type {
    unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
  }

  private func prepared(_ sql: String) throws -> OpaquePointer {
    if let statement = statements[sql] { return statement }
    var statement: OpaquePointer?
    let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard status == SQLITE_OK, let statement else { throw error(status, context: "prepare") }
    statements[sql] = statement
    return statement
  }

  private func value(_ statement: OpaquePointer, _ column: Int32) -> SQLValue {
    switch sqlite3_column_type(statement, column) {
    case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
    case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
    case SQLITE_NULL: return .null
    case SQLITE_BLOB:
      let count = Int(sqlite3_column_bytes(statement, column))
      guard count > 0, let base = sqlite3_column_blob(statement, column) else { return .blob([]) }
      return .blob(Array(UnsafeRawBufferPointer(start: base, count: count)))
    default:
      guard let text = sqlite3_column_text(statement, column) else { return .null }
      return .text(String(cString: text))
    }
  }

  private func error(_ status: Int32, context: String) -> StorageError {
    let message = String(cString: sqlite3_errmsg(handle))
    let primary = status & 0xFF
    let code: StorageError.Code =
      switch primary {
      case SQLITE_BUSY, SQLITE_LOCKED: .busy
      case SQLITE_CONSTRAINT: .conflict
      case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
      case SQLITE_FULL: .full
      // SQLite reports a write that found no space as SQLITE_FULL, but an fsync, a truncate or
      // the shared-memory file's growth as an SQLITE_IOERR_* whose errno says ENOSPC or EDQUOT.
      case SQLITE_IOERR where FileSystem.code(errno: sqlite3_system_errno(handle)) == .full: .full
      case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY: .io
      default: .database
      }
    return StorageError(code, "sqlite \(context): \(message) (\(status)) in \(path)")
  }
}
