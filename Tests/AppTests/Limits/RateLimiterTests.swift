import Dispatch
import Synchronization
import Testing

@testable import App

@Suite struct RateLimiterTests {
  @Test func aFullBucketAllowsTheBurstThenLimits() {
    let clock = ManualClock()
    let limiter = RateLimiter(configuration: .init(requestsPerSecond: 2, burst: 5), clock: clock.clock)
    for _ in 0..<5 { #expect(limiter.acquire(key: "k1") == .allowed) }
    #expect(limiter.acquire(key: "k1") == .limited(retryAfterSeconds: 1))
  }

  @Test func tokensComeBackAtTheConfiguredRate() {
    let clock = ManualClock()
    let limiter = RateLimiter(configuration: .init(requestsPerSecond: 2, burst: 2), clock: clock.clock)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") != .allowed)
    clock.advance(0.49)
    #expect(limiter.acquire(key: "k") != .allowed)
    clock.advance(0.02)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") != .allowed)
    // A long idle period refills to the burst, never beyond it.
    clock.advance(3600)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") != .allowed)
  }

  @Test func retryAfterIsTheWholeSecondsUntilTheNextToken() {
    let clock = ManualClock()
    let limiter = RateLimiter(configuration: .init(requestsPerSecond: 0.1, burst: 1), clock: clock.clock)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .limited(retryAfterSeconds: 10))
    clock.advance(2.5)
    #expect(limiter.acquire(key: "k") == .limited(retryAfterSeconds: 8))
    clock.advance(7.5)
    #expect(limiter.acquire(key: "k") == .allowed)
  }

  @Test func keysHaveSeparateBuckets() {
    let clock = ManualClock()
    let limiter = RateLimiter(configuration: .init(requestsPerSecond: 1, burst: 1), clock: clock.clock)
    #expect(limiter.acquire(key: "a") == .allowed)
    #expect(limiter.acquire(key: "a") != .allowed)
    #expect(limiter.acquire(key: "b") == .allowed)
  }

  @Test func aZeroRateTurnsLimitingOff() {
    let limiter = RateLimiter(
      configuration: .init(requestsPerSecond: 0, burst: 1), clock: ManualClock().clock)
    for _ in 0..<1000 { #expect(limiter.acquire(key: "k") == .allowed) }
    #expect(limiter.trackedKeys == 0)
  }

  @Test func aClockSteppingBackDoesNotDrainTheBucket() {
    let clock = ManualClock()
    let limiter = RateLimiter(configuration: .init(requestsPerSecond: 1, burst: 3), clock: clock.clock)
    #expect(limiter.acquire(key: "k") == .allowed)
    clock.advance(-100)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .allowed)
  }

  @Test func idleBucketsAreEvictedSoMemoryStaysBounded() {
    let clock = ManualClock()
    let limiter = RateLimiter(
      configuration: .init(requestsPerSecond: 1, burst: 2, maxTrackedKeys: 100), clock: clock.clock)
    for i in 0..<100 { _ = limiter.acquire(key: "key\(i)") }
    #expect(limiter.trackedKeys == 100)
    clock.advance(10)  // every bucket is full again
    #expect(limiter.acquire(key: "new") == .allowed)
    #expect(limiter.trackedKeys == 1)
    // All busy: the table still never exceeds its bound.
    for i in 0..<1000 { _ = limiter.acquire(key: "busy\(i)") }
    #expect(limiter.trackedKeys <= 100)
  }

  @Test func anEvictedKeyDoesNotLoseItsDebtWhenOthersAreIdle() {
    let clock = ManualClock()
    let limiter = RateLimiter(
      configuration: .init(requestsPerSecond: 1, burst: 1, maxTrackedKeys: 2), clock: clock.clock)
    #expect(limiter.acquire(key: "idle") == .allowed)
    clock.advance(5)
    #expect(limiter.acquire(key: "hot") == .allowed)
    // A new key arrives while the table is full: the full "idle" bucket goes, "hot" stays empty.
    #expect(limiter.acquire(key: "third") == .allowed)
    #expect(limiter.acquire(key: "hot") != .allowed)
  }

  @Test func concurrentCallersNeverGetMoreThanTheBurst() {
    let limiter = RateLimiter(
      configuration: .init(requestsPerSecond: 1, burst: 50), clock: ManualClock().clock)
    let allowed = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<100 where limiter.acquire(key: "shared") == .allowed {
        allowed.add(1, ordering: .relaxed)
      }
    }
    #expect(allowed.load(ordering: .relaxed) == 50)
  }

  @Test(arguments: [
    (
      RateLimiter.Configuration(requestsPerSecond: -1),
      "limits.requestsPerSecond must be 0 (off) or a positive number"
    ),
    (
      RateLimiter.Configuration(requestsPerSecond: .infinity),
      "limits.requestsPerSecond must be 0 (off) or a positive number"
    ),
    (RateLimiter.Configuration(burst: 0), "limits.burst must be at least 1, not 0"),
    (RateLimiter.Configuration(maxTrackedKeys: 0), "limits.maxTrackedKeys must be at least 1, not 0"),
  ])
  func badSettingsAreRejected(configuration: RateLimiter.Configuration, message: String) {
    #expect(throws: ConfigurationError(message)) { try configuration.validate() }
  }

  @Test func theDefaultsAreValid() throws {
    try RateLimiter.Configuration().validate()
    try UploadConcurrencyLimiter.Configuration().validate()
  }
}

@Suite struct UploadConcurrencyLimiterTests {
  @Test func aKeyOverItsCapIsLimitedUntilAnUploadEnds() {
    let limiter = UploadConcurrencyLimiter(
      configuration: .init(maxConcurrentUploadsPerKey: 2, retryAfterSeconds: 3))
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.acquire(key: "k") == .limited(retryAfterSeconds: 3))
    #expect(limiter.acquire(key: "other") == .allowed)
    limiter.release(key: "k")
    #expect(limiter.acquire(key: "k") == .allowed)
    #expect(limiter.inFlight(key: "k") == 2)
    #expect(limiter.totalInFlight == 3)
  }

  @Test func finishedKeysLeaveNoEntry() {
    let limiter = UploadConcurrencyLimiter(configuration: .init(maxConcurrentUploadsPerKey: 1))
    for i in 0..<1000 {
      #expect(limiter.acquire(key: "k\(i)") == .allowed)
      limiter.release(key: "k\(i)")
    }
    #expect(limiter.trackedKeys == 0)
  }

  @Test func aZeroCapTurnsTheLimitOff() {
    let limiter = UploadConcurrencyLimiter(configuration: .init(maxConcurrentUploadsPerKey: 0))
    for _ in 0..<100 { #expect(limiter.acquire(key: "k") == .allowed) }
  }

  @Test func concurrentUploadsNeverExceedTheCap() {
    let limiter = UploadConcurrencyLimiter(configuration: .init(maxConcurrentUploadsPerKey: 3))
    let running = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<500 where limiter.acquire(key: "k") == .allowed {
        let now = running.add(1, ordering: .relaxed).newValue
        peak.max(now, ordering: .relaxed)
        running.subtract(1, ordering: .relaxed)
        limiter.release(key: "k")
      }
    }
    #expect(peak.load(ordering: .relaxed) <= 3)
    #expect(limiter.trackedKeys == 0)
  }

  @Test func badSettingsAreRejected() {
    #expect(throws: ConfigurationError.self) {
      try UploadConcurrencyLimiter.Configuration(maxConcurrentUploadsPerKey: -1).validate()
    }
    #expect(throws: ConfigurationError.self) {
      try UploadConcurrencyLimiter.Configuration(retryAfterSeconds: 0).validate()
    }
  }
}
