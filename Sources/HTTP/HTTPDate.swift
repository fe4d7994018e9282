#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The `Date` header value in IMF-fixdate form (RFC 9110 §5.6.7), rebuilt at most once a second.
///
/// One per event loop: it is a value, not shared, so no lock is needed.
public struct HTTPDateCache: Sendable {
  private var second: Int64 = .min
  private var cached: [UInt8] = []

  public init() {}

  /// The IMF-fixdate for `epochSeconds` (seconds since 1970-01-01T00:00:00Z).
  public mutating func bytes(epochSeconds: Int64) -> [UInt8] {
    if epochSeconds != second {
      second = epochSeconds
      cached = Self.format(epochSeconds: epochSeconds)
    }
    return cached
  }

  /// The IMF-fixdate for the current wall-clock time.
  public mutating func now() -> [UInt8] {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return bytes(epochSeconds: Int64(ts.tv_sec))
  }

  private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
  private static let months = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
  ]

  /// The IMF-fixdate for `epochSeconds` as text, for date-valued headers other than `Date`
  /// (e.g. tus `Upload-Expires`).
  public static func string(epochSeconds: Int64) -> String {
    String(decoding: format(epochSeconds: epochSeconds), as: UTF8.self)
  }

  /// `Sun, 06 Nov 1994 08:49:37 GMT`, computed with the days-to-civil algorithm (no time zone
  /// database, no Foundation).
  static func format(epochSeconds: Int64) -> [UInt8] {
    let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
    let secondOfDay = Int(epochSeconds - days * 86_400)
    let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
    let month = Int(mp < 10 ? mp + 3 : mp - 9)
    let year = Int(yearOfEra + era * 400 + (month <= 2 ? 1 : 0))

    var out: [UInt8] = []
    out.reserveCapacity(29)
    func two(_ n: Int) {
      out.append(UInt8(0x30 + n / 10))
      out.append(UInt8(0x30 + n % 10))
    }
    out += weekdays[weekday].utf8
    out += ", ".utf8
    two(day)
    out.append(ASCII.space)
    out += months[month - 1].utf8
    out.append(ASCII.space)
    two(year / 100 % 100)
    two(year % 100)
    out.append(ASCII.space)
    two(secondOfDay / 3600)
    out.append(ASCII.colon)
    two(secondOfDay / 60 % 60)
    out.append(ASCII.colon)
    two(secondOfDay % 60)
    out += " GMT".utf8
    return out
  }
}
