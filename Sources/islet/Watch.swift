import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet watch`: live events in the terminal, reconnecting without gaps until interrupted.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch live events (one line each; --json for one JSON object per line).",
        discussion: "Reconnects after a dropped connection and resumes after the last event it printed."
    )

    @Option(help: "Only this app's events.")
    var app: String?

    @Option(help: "Only this device's events.")
    var device: String?

    @Option(help: "Only this activity's events.")
    var activity: String?

    @Option(help: "Start after this event id (0 replays all stored events).")
    var since: EventID?

    @Flag(help: "Deliver every content update even when behind (by default a newer one replaces older ones not yet sent).")
    var noCoalesce = false

    @Option(help: "Stop after this many events.")
    var count: Int?

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let output = Output(json: options.json)
        let filter = EventFilter(bundleId: app, deviceId: device, activityId: activity)
        try await options.run { client in
            // Without --since, start from the newest event, so a reconnect resumes from there
            // rather than skipping what happened while the connection was down.
            var cursor = since
            if cursor == nil, case .integer(let newest) = try await client.health()["lastEventId"] {
                cursor = newest
            }
            var printed = 0
            var connected = false
            var lost = false
            var retry: Duration = .milliseconds(250)
            // While the server is away, a word every so often that the command is still trying.
            var lastNote = ContinuousClock.now
            while true {
                do {
                    let stream = try await client.events(.init(filter: filter, since: cursor, coalesce: !noCoalesce))
                    if lost {
                        Self.note("reconnected; resuming after event \(cursor.map(String.init) ?? "-")")
                    } else if !connected {
                        Self.note("watching \(options.serverURL): events after #\(cursor ?? 0); Ctrl-C to stop")
                    }
                    connected = true
                    lost = false
                    retry = .milliseconds(250)
                    for try await event in stream {
                        output.event(event)
                        cursor = event.id
                        printed += 1
                        if let count, printed >= count { return }
                    }
                    Self.note("the server ended the stream; reconnecting")
                    lost = true
                } catch let error as ClientError {
                    // A refusal will not change by retrying, nor a server that was never there.
                    if case .refused = error { throw error }
                    if !connected { throw error }
                    Self.lost(error, already: lost, lastNote: &lastNote)
                    lost = true
                } catch {
                    Self.lost(error, already: lost, lastNote: &lastNote)
                    lost = true
                }
                try await Task.sleep(for: retry)
                retry = min(retry * 2, .seconds(5))
            }
        }
    }

    /// Says the connection was lost, the first time; then, every 10 s, that it is still trying.
    private static func lost(_ error: any Error, already: Bool, lastNote: inout ContinuousClock.Instant) {
        if !already {
            note("connection lost (\(error)); reconnecting until the server is back")
            lastNote = .now
        } else if ContinuousClock.now - lastNote >= .seconds(10) {
            note("still reconnecting (\(error))")
            lastNote = .now
        }
    }

    private static func note(_ text: String) {
        Terminal.error("watch: \(text)")
    }
}
