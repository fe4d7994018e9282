import Foundation
import Server

/// The in-process mode's own threads for `Pool.cpu` and `Pool.io`, with the server's rules:
/// the CPU pool refuses work past its queue (the request is answered `.overloaded`), the I/O
/// pool never refuses.
final class InProcessPools: Sendable {
  let cpu: WorkerPool
  let io: WorkerPool

  init(cpuThreads: Int, cpuQueueLength: Int, ioThreads: Int) {
    cpu = WorkerPool(threads: cpuThreads, queueLength: cpuQueueLength, name: "tcpu")
    io = WorkerPool(threads: ioThreads, queueLength: 1 << 20, name: "tio")
  }

  /// Queues `work` on `pool`; false when the CPU pool refused it.
  func submit(_ pool: Pool, _ work: @escaping @Sendable () -> Void) -> Bool {
    switch pool {
    case .cpu: return cpu.trySubmit(work)
    case .io:
      if !io.trySubmit(work) { Thread.detachNewThread(work) }
      return true
    }
  }

  /// Lets the threads go once their queues are empty.
  func shutdown() {
    cpu.shutdown(wait: false)
    io.shutdown(wait: false)
  }
}
