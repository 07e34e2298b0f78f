import ArgumentParser
import IsletClient
import IsletCore

/// `--all` and its filters, for commands that act on every activity they select (`end --all`,
/// `dismiss --all`): a clean slate after a tour, a demo or a test run.
struct EveryActivityOptions: ParsableArguments {
    @Flag(help: "Every activity the filters select, instead of one id.")
    var all = false

    @Option(help: "With --all: only this app's (env ISLET_APP; an app's key acts on its own only).")
    var app: String?

    @Option(help: "With --all: only this device's.")
    var device: String?

    @Option(help: "With --all: only this attributes type.")
    var type: String?

    /// Checks that exactly one of an id and `--all` was given, and filters only with `--all`.
    func validate(id: String?) throws {
        if (id == nil) == !all { throw ValidationError("Give an activity's id or --all, one of them.") }
        if !all, app != nil || device != nil || type != nil {
            throw ValidationError("--app, --device and --type select activities for --all.")
        }
    }

    /// Applies `action` to every activity in `states` the filters select, listing again until
    /// none is left — a listing holds at most 1,000 — and returns how many it was applied to.
    /// One that is refused is reported on the standard error and left; the rest go on.
    func forEach(
        in states: Set<ActivityState>, client: IsletClient, output: Output, _ action: (ActivityID) async throws -> Void
    ) async throws -> Int {
        // ISLET_APP names the app the admin key acts as, here as in `islet start`.
        let bundleId = ClientOptions.app(app)
        let filter = ActivityFilter(bundleId: bundleId, deviceId: device, states: states, attributesType: type, limit: 1000)
        var tried: Set<ActivityID> = []
        var done = 0
        while true {
            let fresh = try await client.activities(filter).map(\.id).filter { !tried.contains($0) }
            if fresh.isEmpty { return done }
            for id in fresh {
                tried.insert(id)
                do {
                    try await action(id)
                    done += 1
                } catch let error as ClientError {
                    output.warn("\(id.prefix(8)): \(error)")
                }
            }
        }
    }
}
