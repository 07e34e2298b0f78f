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
        var cursor = since
        var printed = 0
        var retry: Duration = .milliseconds(250)
        while true {
            let stream = try await options.run { client in
                try await client.events(.init(
                    filter: EventFilter(bundleId: app, deviceId: device, activityId: activity), since: cursor,
                    coalesce: !noCoalesce
                ))
            }
            retry = .milliseconds(250)
            do {
                for try await event in stream {
                    output.event(event)
                    cursor = event.id
                    printed += 1
                    if let count, printed >= count { return }
                }
            } catch {
                FileHandle.standardError.write(Data("watch: connection lost (\(error)); reconnecting\n".utf8))
            }
            try await Task.sleep(for: retry)
            retry = min(retry * 2, .seconds(5))
        }
    }
}
