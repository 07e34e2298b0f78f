import Foundation
import Testing

@testable import IsletKit

@Suite("Key path names")
struct KeyPathNamesTests {
    struct Ride: Codable {
        struct Rider: Codable {
            var name: String
            var weight: Double
        }
        struct Lap: Codable {
            var seconds: Int
            var best: Bool
        }
        enum Mode: String, Codable, CaseIterable {
            case road, gravel
        }
        var speed: Double
        var distance: Double
        var averageSpeed: Float
        var name: String
        var startedAt: Date
        var paused: Bool
        var finished: Bool
        var count: Int
        var note: String?
        var rider: Rider
        var laps: [Lap]
        var mode: Mode
        var lastMode: Mode?

        enum CodingKeys: String, CodingKey {
            case speed, distance, averageSpeed = "avg_speed", name, startedAt, paused, finished, count, note, rider, laps, mode
            case lastMode = "last_mode"
        }
    }

    @Test func everyLeafHasItsJSONPath() throws {
        let names = try KeyPathNames<Ride>()
        let expected: [(PartialKeyPath<Ride>, String?)] = [
            (\.speed, "speed"), (\.distance, "distance"), (\.averageSpeed, "avg_speed"), (\.name, "name"),
            (\.startedAt, "startedAt"), (\.paused, "paused"), (\.finished, "finished"), (\.count, "count"),
            (\.note, "note"), (\.rider.name, "rider.name"), (\.rider.weight, "rider.weight"),
            (\.laps[0].seconds, "laps[0].seconds"), (\.laps[0].best, "laps[0].best"),
            // Objects, by a leaf inside them; enums by a probe that gives them their second case.
            (\.rider, "rider"), (\.laps[0], "laps[0]"), (\.mode, "mode"), (\.lastMode, "last_mode"),
        ]
        for (keyPath, path) in expected {
            #expect(names.path(of: keyPath) == path, "\(keyPath)")
        }
    }

    @Test func aTypeTheProbeCannotBuildSaysWhy() {
        enum Status: Codable { case pending, failed }
        struct State: Codable {
            var status: Status
        }
        #expect(throws: DecodingError.self) { try KeyPathNames<State>() }
    }
}
