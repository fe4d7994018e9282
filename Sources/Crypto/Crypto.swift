// Crypto module.
private import CCrypto

enum LinkCheck { static func v() -> UInt { OpenSSL_version_num() } }
