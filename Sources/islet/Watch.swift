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
            while true {
                do {
                    let stream = try await client.events(.init(filter: filter, since: cursor, coalesce: !noCoalesce))
                    if lost { Self.note("reconnected; resuming after event \(cursor.map(String.init) ?? "-")") }
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
                    if !lost { Self.note("connection lost (\(error)); reconnecting until the server is back") }
                    lost = true
                } catch {
                    if !lost { Self.note("connection lost (\(error)); reconnecting until the server is back") }
                    lost = true
                }
                try await Task.sleep(for: retry)
                retry = min(retry * 2, .seconds(5))
            }
        }
    }

    private static func note(_ text: String) {
        Terminal.error("watch: \(text)")
    }
}
