import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

/// An app's users, their phones and tags (docs/audiences.md), on each store: written whole,
/// listed by every tag asked for in `externalId` order a page at a time, kept per app.
@Suite("An app's users", .hangDetector)
struct AppUserTests {
    private let app: BundleID = "com.example.bike"

    @Test(arguments: StoreKind.available) func usersAreWrittenWholeAndListedByEveryTagAskedFor(store: StoreKind) async throws {
        try await EngineFixture.with(store, apps: [app, "com.example.other"]) { fixture in
            let engine = fixture.engine
            for id in ["phone-2", "phone-3"] { try await engine.createDevice(Device(id: id, name: id, createdAt: t0)) }
            // 30 users: every one follows match 123, every third is an Ajax fan.
            for index in 0..<30 {
                var tags = ["match": "123"]
                if index % 3 == 0 { tags["team"] = "ajax" }
                let (user, created) = try await engine.putUser(
                    bundleId: app, externalId: String(format: "u-%03d", index), PutAppUserBody(devices: ["default", "phone-2", "default"], tags: tags)
                )
                #expect(created && user.devices == ["default", "phone-2"], "a phone given twice is kept once")
            }
            // Another app's user with the same tags is not this app's.
            _ = try await engine.putUser(bundleId: "com.example.other", externalId: "u-000", PutAppUserBody(tags: ["match": "123", "team": "ajax"]))

            var walked: [String] = []
            var page = PageRequest<String>(limit: 4)
            repeat {
                let found = try await engine.users(bundleId: app, tags: ["match": "123", "team": "ajax"], page: page)
                walked += found.items.map(\.externalId)
                guard let next = found.next else { break }
                page = try PageRequest(limit: "4", cursor: next)
            } while true
            #expect(walked == stride(from: 0, to: 30, by: 3).map { String(format: "u-%03d", $0) })
            #expect(try await engine.users(bundleId: app, tags: [:], page: PageRequest(limit: 1_000)).items.count == 30)
            #expect(try await engine.users(bundleId: app, tags: ["match": "124"], page: PageRequest()).items.isEmpty)

            // Written again, whole: the old tag no longer finds it, the new one does.
            let (changed, created) = try await engine.putUser(bundleId: app, externalId: "u-000", PutAppUserBody(devices: ["phone-3"], tags: ["team": "psv"]))
            #expect(!created && changed.devices == ["phone-3"] && changed.createdAt <= changed.updatedAt)
            #expect(try await engine.users(bundleId: app, tags: ["team": "ajax"], page: PageRequest()).items.first?.externalId == "u-003")
            #expect(try await engine.users(bundleId: app, tags: ["team": "psv"], page: PageRequest()).items.map(\.externalId) == ["u-000"])

            // Forgotten: gone from every listing, and only this app's.
            try await engine.deleteUser(bundleId: app, externalId: "u-000")
            await #expect(throws: IsletError(.userNotFound, "com.example.bike has no user u-000.")) {
                try await engine.user(bundleId: app, externalId: "u-000")
            }
            #expect(try await engine.users(bundleId: app, tags: ["team": "psv"], page: PageRequest()).items.isEmpty)
            #expect(try await engine.user(bundleId: "com.example.other", externalId: "u-000").tags["team"] == "ajax")
            await #expect(throws: IsletError.self) { try await engine.deleteUser(bundleId: app, externalId: "u-000") }
        }
    }

    @Test func whatAUserMayNotHoldIsRefusedWhereItEnters() async throws {
        try await EngineFixture.with(apps: [app]) { fixture in
            let engine = fixture.engine
            let refused: [(String, PutAppUserBody)] = [
                ("", PutAppUserBody()),
                (String(repeating: "x", count: 129), PutAppUserBody()),
                ("tab\there", PutAppUserBody()),
                ("u-1", PutAppUserBody(tags: ["a:b": "c"])),
                ("u-1", PutAppUserBody(tags: ["": "c"])),
                ("u-1", PutAppUserBody(tags: ["a": String(repeating: "v", count: 257)])),
                ("u-1", PutAppUserBody(tags: Dictionary(uniqueKeysWithValues: (0..<65).map { ("t\($0)", "v") }))),
                ("u-1", PutAppUserBody(devices: (0..<33).map { "phone-\($0)" })),
            ]
            for (id, body) in refused {
                await #expect(throws: IsletError.self, "\(id.prefix(20)) \(body)") { try await engine.putUser(bundleId: app, externalId: id, body) }
            }
            await #expect(throws: IsletError(.deviceNotFound, "devices: no device nowhere.")) {
                try await engine.putUser(bundleId: app, externalId: "u-1", PutAppUserBody(devices: ["nowhere"]))
            }
            await #expect(throws: IsletError.self) {
                try await engine.putUser(bundleId: "com.example.none", externalId: "u-1", PutAppUserBody())
            }
            let written = try await engine.users(bundleId: app, tags: [:], page: PageRequest())
            #expect(written.items.isEmpty, "nothing refused was written")
        }
    }
}
