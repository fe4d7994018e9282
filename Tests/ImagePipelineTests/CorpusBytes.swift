import Foundation
import TestSupport

/// Corpus file bytes as the pipeline takes them.
func corpusBytes(_ name: String) throws -> [UInt8] {
  [UInt8](try Corpus.data(name))
}

let corpusPresent = Corpus.directory != nil
