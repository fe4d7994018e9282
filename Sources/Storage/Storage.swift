// Storage module. See DESIGN.md §3.
private import CSQLite

enum LinkCheck { static let v = sqlite3_libversion_number() }
