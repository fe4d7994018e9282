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
}
