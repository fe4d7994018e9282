import Testing

@testable import Uploads

/// The rules of a body streamed into an upload, as values: no I/O, every interleaving of
/// slices, flushes, timer commits, the end of the body and a client that leaves.
@Suite struct UploadStreamMachineTests {
  typealias Machine = UploadStreamMachine

  /// A machine that has opened its writer and is reading.
  static func streaming() -> Machine {
    var machine = Machine()
    #expect(machine.start() == .open)
    #expect(machine.opened() == .resume)
    #expect(machine.phase == .streaming)
    return machine
  }

  @Test func nothingIsReadBeforeTheWriterIsOpenAndReadingResumesOnceItIs() {
    var machine = Machine()
    #expect(machine.start() == .open)
    #expect(machine.paused)
    #expect(machine.slice() == .none)
    #expect(machine.opened() == .resume)
    #expect(!machine.paused)
  }

  @Test func aFullBufferPausesReadingUntilTheFlushIsDone() {
    var machine = Self.streaming()
    #expect(machine.slice() == .append)
    #expect(machine.appended(.buffered) == .none)
    #expect(machine.slice() == .append)
    #expect(machine.appended(.flushNeeded) == .flush)
    #expect(machine.paused && machine.ioBusy)
    #expect(machine.ioFinished() == .resume)
    #expect(!machine.paused && !machine.ioBusy)
  }

  @Test func aSliceDuringATimerCommitIsStashedAndAppendedAfterIt() {
    var machine = Self.streaming()
    #expect(machine.commitDue() == .commit)
    #expect(machine.commitDue() == .none, "one writer call at a time")
    #expect(machine.slice() == .stash)
    #expect(machine.paused)
    #expect(machine.ioFinished() == .appendStash)
    #expect(machine.appended(.buffered, fromStash: true) == .resume)
    #expect(!machine.stashed && !machine.paused)
  }

  @Test func aStashThatFillsTheBufferIsFlushedBeforeReadingResumes() {
    var machine = Self.streaming()
    _ = machine.commitDue()
    _ = machine.slice()
    #expect(machine.ioFinished() == .appendStash)
    #expect(machine.appended(.flushNeeded, fromStash: true) == .flush)
    #expect(machine.ioFinished() == .resume)
  }

  @Test func aTimerCommitWithoutASliceDoesNotResumeReadingThatWasNotPaused() {
    var machine = Self.streaming()
    #expect(machine.commitDue() == .commit)
    #expect(machine.ioFinished() == .none)
  }

  @Test func theEndOfTheBodyClosesAtOnceOrOnceTheRunningCallIsDone() {
    var idle = Self.streaming()
    #expect(idle.ended() == .close(.finished))
    #expect(idle.phase == .closing)

    var busy = Self.streaming()
    _ = busy.commitDue()
    #expect(busy.ended() == .none)
    #expect(busy.ioFinished() == .close(.finished))
  }

  @Test func aClientThatLeavesWhileTheWriterOpensHasItClosedOnceOpen() {
    var machine = Machine()
    _ = machine.start()
    #expect(machine.aborted() == .none)
    #expect(machine.opened() == .close(.aborted))
  }

  @Test func aClientThatLeavesDuringAFlushHasTheWriterClosedAfterTheFlush() {
    var machine = Self.streaming()
    _ = machine.slice()
    _ = machine.appended(.flushNeeded)
    #expect(machine.aborted() == .none)
    #expect(machine.ioFinished() == .close(.aborted))
    #expect(machine.aborted() == .none, "closed once")
    machine.closed()
    #expect(machine.phase == .stopped)
  }

  @Test func aRefusedAppendClosesTheWriterAndStopsReading() {
    var machine = Self.streaming()
    _ = machine.slice()
    #expect(machine.appended(.refused) == .close(.refused))
    #expect(machine.slice() == .none)
    #expect(machine.ended() == .none)
  }

  @Test func aFailedFlushClosesWhatWasCommitted() {
    var machine = Self.streaming()
    _ = machine.slice()
    _ = machine.appended(.flushNeeded)
    #expect(machine.failed() == .close(.refused))
  }

  @Test func aTakeoverStopsEverythingWithoutAClose() {
    var machine = Self.streaming()
    _ = machine.commitDue()
    _ = machine.slice()
    machine.preempted()
    #expect(machine.ioFinished() == .none)
    #expect(machine.ended() == .none)
    #expect(machine.aborted() == .none)
    #expect(machine.commitDue() == .none)
  }

  @Test func aPreludeIsAppendedBeforeReadingStarts() {
    var machine = Machine()
    _ = machine.start()
    #expect(machine.opened(prelude: true) == .appendStash)
    #expect(machine.appended(.flushNeeded, fromStash: true) == .flush)
    #expect(machine.ioFinished() == .resume)
  }

  @Test func aWriterThatCannotBeOpenedStopsTheMachine() {
    var machine = Machine()
    _ = machine.start()
    machine.openFailed()
    #expect(machine.phase == .stopped)
    #expect(machine.opened() == .none)
    #expect(machine.ended() == .none)
  }
}
