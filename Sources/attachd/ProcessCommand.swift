import PipelineCLI
import Server

/// `attachd process IN OUT [--max-edge N] [--quality Q] [--deadline SECONDS]` (logic in
/// `PipelineCLI.ProcessCLI`).
enum ProcessCommand {
  static func run(_ arguments: [String]) -> Int32 {
    // The same malloc settings as `attachd serve`, so the CLI measures what the service does.
    // Even one image gains: the decode, resize and encode buffers (a few MB each) are otherwise
    // fresh `mmap`s, unmapped on `free` and faulted in again by the next step; kept in the
    // arena, a freed one is reused. Measured on the 12 MP iPhone XS HEIC: 0.28 → 0.24 s CPU.
    MallocTuning.keepFreedBuffersForReuse()
    MallocTuning.hugePageHeap()
    return ProcessCLI.run(arguments)
  }
}
