import CLinux
import Glibc
import Server
import Testing

@Suite struct MallocTuningTests {
  @Test func imageSizedBlocksComeFromTheArenaInsteadOfFreshMappings() throws {
    #expect(MallocTuning.keepFreedBuffersForReuse())
    let before = mallinfo2().hblks
    // An 8 MiB block: glibc's default (128 KiB, rising only after frees) maps it afresh.
    let block = try #require(malloc(8 << 20))
    defer { free(block) }
    memset(block, 1, 8 << 20)
    #expect(mallinfo2().hblks == before)
  }
}
