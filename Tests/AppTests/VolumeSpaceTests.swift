import Foundation
import TestSupport
import Testing

@testable import App

/// How `/readyz` learns that the data directory's volume is full, and that it is not any more,
/// on a tmpfs of the test's own.
@Suite(
  .serialized, .enabled(if: SmallVolume.canMount, "skipped: this process may not mount a tmpfs (needs root)"))
struct VolumeSpaceTests {
  @Test func aVolumeBelowTheFloorIsFullUntilSpaceIsFreed() throws {
    let volume = try SmallVolume(megabytes: 2)
    defer { volume.unmount() }
    let space = VolumeSpace(path: volume.path, floorBytes: 64 << 10)
    #expect(space.problem() == nil)
    try volume.fill()
    #expect(space.freeBytes() == 0)
    #expect(space.problem()?.contains("volume is full") == true)
    volume.free()
    #expect(space.problem() == nil)
  }

  @Test func aWriteThatFoundNoSpaceCountsUntilAFloorMoreIsFreeOrItIsForgotten() throws {
    let volume = try SmallVolume(megabytes: 2)
    defer { volume.unmount() }
    let space = VolumeSpace(path: volume.path, floorBytes: 64 << 10, memory: 60)
    // Room above the floor, but a body larger than that room found none.
    try volume.fill(leaving: 256 << 10)
    let noted = Date()
    #expect(space.problem(now: noted) == nil)
    space.noteFull(now: noted)
    #expect(space.problem(now: noted)?.contains("a write found no space") == true)
    // Less than a floor more: still full.
    try volume.fill(leaving: 288 << 10)
    #expect(space.problem(now: noted.addingTimeInterval(1)) != nil)
    // Past the memory without another such write: no longer.
    #expect(space.problem(now: noted.addingTimeInterval(61)) == nil)
    space.noteFull(now: noted)
    // A floor more free: no longer either.
    try volume.fill(leaving: 512 << 10)
    #expect(space.problem(now: noted.addingTimeInterval(1)) == nil)
  }
}
