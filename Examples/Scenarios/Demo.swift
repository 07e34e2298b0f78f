import Foundation
import IsletClient
import IsletCore
import IsletKit

/// One of the reference documents' scenarios, runnable against a server: `islet demo <name>`.
///
/// A demo is an app: it acts through IsletKit (configured for its `bundleId` before `run`) as
/// an iOS app acts through ActivityKit, with its layout written in the layout DSL.
public protocol Demo: Sendable {
    /// The name `islet demo` knows it by.
    var name: String { get }
    /// One line for `islet demo --help`.
    var summary: String { get }
    /// The app of its own it plays in with the admin key (with an app's key it plays in that
    /// app: `DemoContext.bundleId`).
    var bundleId: String { get }
    /// Its activity type's name (the Swift type's, as ActivityKit names it). A name of the demos'
    /// own (`IsletDemo…`, `IsletCI…`): a demo played with an app's key plays in that app, whose
    /// own types must never be drawn with the demo's layout.
    var attributesType: String { get }
    /// Its activity type's layout document, registered before it runs.
    func layout() throws -> JSONValue
    /// Plays the scenario to its end; cancelled, it ends what it started and rethrows.
    func run(in context: DemoContext) async throws
}

/// Every demo, in the order `islet demo --help` lists them.
public enum Demos {
    public static let all: [any Demo] = [BikeRide(), CIBuild(), WaterCountdown(), Delivery()]

    public static func named(_ name: String) -> (any Demo)? {
        all.first { $0.name == name }
    }
}

/// What a demo runs with: its pace, where to report, and the provider side's tools.
public struct DemoContext: Sendable {
    /// The app it plays in: the demo's own (`Demo.bundleId`), or the app whose key it was given.
    public var bundleId: String
    /// How many times faster than real time: 1 plays a five-minute countdown in five minutes.
    public var speed: Double
    /// The server, for what an app does not do through ActivityKit (the provider's key).
    public var client: IsletClient
    /// The server's APNs-compatible endpoint, for demos played by pushes.
    public var apns: APNsClient
    /// A line that replaces the previous progress line (a terminal redraws it in place).
    public var progress: @Sendable (String) -> Void
    /// A line that stays: a phase began or ended.
    public var note: @Sendable (String) -> Void

    public init(
        bundleId: String, speed: Double, client: IsletClient, apns: APNsClient, progress: @escaping @Sendable (String) -> Void,
        note: @escaping @Sendable (String) -> Void
    ) {
        self.bundleId = bundleId
        self.speed = speed
        self.client = client
        self.apns = apns
        self.progress = progress
        self.note = note
    }

    /// Waits `seconds` of the demo's time (shortened by `speed`); throws when cancelled.
    public func pause(_ seconds: Double) async throws {
        try await Task.sleep(for: .seconds(seconds / speed))
    }

    /// A clock that starts now and counts the demo's seconds, for steady ticks (a slow request
    /// does not push every later tick back).
    public func schedule() -> Schedule { Schedule(speed: speed) }

    public struct Schedule: Sendable {
        let start = ContinuousClock.now
        let speed: Double

        /// Waits until `second` of the demo's time since the schedule began.
        public func wait(until second: Double) async throws {
            try await Task.sleep(until: start.advanced(by: .seconds(second / speed)), clock: .continuous)
        }
    }

    /// The demo's time, `seconds` from now, as a date on the real clock (for timers and stale dates).
    public func date(in seconds: Double) -> Date {
        Date().addingTimeInterval(seconds / speed)
    }
}

extension IsletKit.Activity {
    /// Runs `body`; when the demo is cancelled (Ctrl-C), ends the activity at once and rethrows,
    /// so no demo leaves a live activity behind.
    func endingOnCancel(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch is CancellationError {
            // In a task of its own: a request made from the cancelled task would be cancelled too.
            await Task.detached { [self] in await end(nil, dismissalPolicy: .immediate) }.value
            throw CancellationError()
        }
    }
}

extension IsletKit.Activity {
    /// Throws `DemoStopped` once someone else ended or dismissed the activity (`islet end`, a
    /// person on the display): a demo stops rather than sending updates nothing applies.
    func requireShown() throws {
        let state = activityState
        guard state == .ended || state == .dismissed else { return }
        throw DemoStopped(description: "activity \(id.prefix(8)) was \(state.rawValue) elsewhere (islet end or dismiss, or on the display); nothing more to play.")
    }
}

/// A demo that stopped because its activity was ended by someone else: not a failure.
public struct DemoStopped: Error, CustomStringConvertible {
    public let description: String
}

/// `mm:ss`, for progress lines.
func clock(_ seconds: Double) -> String {
    let whole = Int(seconds.rounded(.down))
    return String(format: "%02d:%02d", whole / 60, whole % 60)
}

/// Why a demo stopped.
public struct DemoError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The first element of `sequence`, or `nil` when none comes within `seconds`.
func first<S: AsyncSequence & Sendable>(of sequence: S, within seconds: Double) async -> S.Element? where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            // A loop, not `sequence.first { _ in true }`: Swift 6.3.1 crashes optimizing that (-c release).
            do {
                for try await element in sequence { return element }
            } catch {}
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// Values as the wire carries them.
enum Wire {
    /// As iOS encodes them: a default `JSONEncoder` (dates in seconds since 2001).
    static func json(_ value: some Encodable) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    /// A token as APNs paths carry it.
    static func hex(_ token: Data) -> String {
        token.map { String(format: "%02x", $0) }.joined()
    }
}
