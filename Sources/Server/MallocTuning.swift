import CLinux

/// glibc malloc settings for a process that allocates and frees image-sized buffers all day.
///
/// By default glibc serves blocks of a few MB with fresh `mmap`s (or trims its arenas with
/// `madvise`) and gives them back on `free`, so every upload faults its decode, resize and
/// encode buffers in again page by page: measured on a 12 MP JPEG upload, page faults and
/// `madvise` were 15 % of the server's CPU. Keeping freed memory in the arenas for reuse took
/// the server from 101–110 to 88–92 ms of CPU per image; 16 clients sending 48 MP photos then
/// peaked at 346 MiB instead of 294 MiB. Blocks over 32 MiB (glibc's ceiling for this
/// setting) are still mapped and unmapped, so a rare huge photo does not stay resident.
public enum MallocTuning {
  /// Blocks up to this size come from the arenas (and are reused) instead of `mmap`.
  public static let mmapThreshold: Int32 = 32 << 20
  /// Free memory an arena keeps at its top before it is returned to the kernel.
  public static let trimThreshold: Int32 = 256 << 20

  /// Applies the settings (call once at start-up, before the worker threads start); false
  /// when glibc refused them, which only costs speed.
  @discardableResult
  public static func keepFreedBuffersForReuse() -> Bool {
    mallopt(M_MMAP_THRESHOLD, mmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, trimThreshold) == 1
  }

  /// For a process that handles one image and exits (`attachd process`): grows the main arena
  /// once by `reserve` bytes and asks for that range in transparent huge pages, so its buffers
  /// fault in 2 MiB at a time instead of 4 KiB. A one-image process touches ~14 MB of fresh
  /// memory (tile strips, output planes, encode buffer): ~3 500 page faults, ~5 % of the CPU of a
  /// 12 MP HEIC (measured: 5 270 → 2 900 faults, 194 → 180 ms, as with glibc's own
  /// `glibc.malloc.hugetlb=1`). Not for the server: it keeps its freed buffers (see above), so
  /// they fault in once, and whole huge pages would stay resident. Where THP is off
  /// (`/sys/kernel/mm/transparent_hugepage/enabled` = never) the advice is ignored.
  /// Call after `keepFreedBuffersForReuse()`, from the thread that will do the work.
  @discardableResult
  public static func hugePageHeap(reserve: Int = 96 << 20) -> Bool {
    let hugePage = 2 << 20
    // The next extension of the heap adds `reserve` on top of what it is for; freed at once,
    // the block and the pad stay the arena's top (below the trim threshold).
    guard mallopt(M_TOP_PAD, Int32(reserve)) == 1, let block = malloc(hugePage) else { return false }
    let top = CLinux_heapEnd()
    free(block)
    _ = mallopt(M_TOP_PAD, 128 << 10)  // glibc's default
    guard let top, top != UnsafeMutableRawPointer(bitPattern: -1) else { return false }
    let start = (Int(bitPattern: block) + hugePage - 1) & ~(hugePage - 1)
    let end = Int(bitPattern: top) & ~(hugePage - 1)
    guard end > start, let address = UnsafeMutableRawPointer(bitPattern: start) else { return false }
    return CLinux_madviseHugePages(address, end - start) == 0
  }
}
