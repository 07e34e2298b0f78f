import Foundation
import GRDB
import IsletCore
@testable import IsletEngine
@testable import IsletStore
import IsletTestSupport
import Testing

/// An activity named by its whole id in any case, or by the first characters of it, as `watch`
/// and the tables print them.
@Suite("Activity references", .hangDetector)
struct ActivityReferenceTests {
    /// Copies `activity`'s row under another id, so two ids share a chosen prefix.
    private func copy(_ id: ActivityID, as newId: ActivityID, bundleId: BundleID? = nil, in store: SQLiteStore) async throws {
        try await store.pool.write { db in
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(activity)").map { $0["name"] as String }
            let values = columns.map { column in
                switch column {
                case "id": "?"
                case "key": "NULL"
                case "bundleId" where bundleId != nil: "'\(bundleId!)'"
                default: column
                }
            }
            try db.execute(
                sql: "INSERT INTO activity (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM activity WHERE id = ?",
                arguments: [newId, id]
            )
        }
    }

    @Test func referencesAreReadAsIdsOrPrefixes() throws {
        let id = "0F8FAD5B-D9CB-469F-A165-70867728950E"
        #expect(try ActivityReference(id.lowercased()) == .id(id))
        #expect(try ActivityReference("0f8fad5b") == .prefix("0F8FAD5B"))
        #expect(try ActivityReference("0f8f") == .prefix("0F8F"))
        #expect(throws: IsletError.self) { try ActivityReference("0f8") }
        #expect((try? ActivityReference("nosuch")) == nil)
        #expect((try? ActivityReference("0f8f'; --")) == nil)
        #expect((try? ActivityReference(id + "0")) == nil)
    }

    @Test func aPrefixNamesTheOneActivityItStarts() async throws {
        try await EngineFixture.with(apps: ["com.example.bike", "com.example.ci"]) { fixture in
            let (engine, store) = (fixture.engine, fixture.sqlite)
            let id = try await fixture.start(ride(0)).id
            #expect(try await engine.resolve(.prefix(String(id.prefix(8))), owner: nil) == id)
            #expect(try await engine.resolve(.prefix(String(id.prefix(8))), owner: "com.example.bike") == id)
            #expect(try await engine.resolve(.id(id), owner: nil) == id)

            // Another app's activity is not found by prefix with an app's key.
            await #expect { try await engine.resolve(.prefix(String(id.prefix(8))), owner: "com.example.ci") } throws: {
                ($0 as? IsletError)?.reason == .activityNotFound
            }

            // Two ids that share the prefix: refused, naming both; more characters tell them apart.
            let twin = String(id.prefix(8)) + "-0000-0000-0000-000000000000"
            try await copy(id, as: twin, in: store)
            await #expect { try await engine.resolve(.prefix(String(id.prefix(8))), owner: nil) } throws: { error in
                guard let error = error as? IsletError, error.reason == .invalidRequest else { return false }
                return error.message.contains(id) && error.message.contains(twin)
            }
            #expect(try await engine.resolve(.prefix(String(id.prefix(13))), owner: nil) == id)
            // An app's key only sees its own: the other app's twin makes no ambiguity for it.
            let otherTwin = String(id.prefix(6)) + "FF-0000-0000-0000-000000000000"
            try await copy(id, as: otherTwin, bundleId: "com.example.ci", in: store)
            await #expect { try await engine.resolve(.prefix(String(id.prefix(6))), owner: nil) } throws: { _ in true }
            await #expect { try await engine.resolve(.prefix(String(id.prefix(8))), owner: "com.example.bike") } throws: { _ in true }
            #expect(try await engine.resolve(.prefix(String(id.prefix(6)) + "FF"), owner: "com.example.ci") == otherTwin)
        }
    }
}
