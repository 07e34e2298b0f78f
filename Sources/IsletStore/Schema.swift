import GRDB

/// The store's schema, as versioned migrations: a migration, once released, never changes.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: apps, keys, devices, activities, events") { db in
            try db.create(table: "app") { table in
                table.primaryKey("bundleId", .text)
                table.column("name", .text).notNull()
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "apiKey") { table in
                table.primaryKey("hash", .text)
                // NULL for the admin key.
                table.column("bundleId", .text).references("app", onDelete: .cascade)
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "device") { table in
                table.primaryKey("id", .text)
                table.column("name", .text).notNull()
                table.column("createdAt", .double).notNull()
            }
            try db.create(table: "appSettings") { table in
                table.column("deviceId", .text).notNull().references("device", onDelete: .cascade)
                table.column("bundleId", .text).notNull().references("app", onDelete: .cascade)
                table.column("activitiesEnabled", .boolean).notNull()
                table.column("frequentUpdates", .boolean).notNull()
                table.primaryKey(["deviceId", "bundleId"])
            }
            // The activity itself is kept whole as JSON in `body`; the other columns are copies
            // of its fields that queries filter on. `deadline` is the next moment the rules act
            // on it by themselves, so a restart resumes every timer from the data.
            try db.create(table: "activity") { table in
                table.primaryKey("id", .text)
                table.column("bundleId", .text).notNull().references("app")
                table.column("deviceId", .text).notNull().references("device")
                table.column("attributesType", .text).notNull()
                table.column("state", .text).notNull()
                table.column("key", .text)
                table.column("deadline", .double)
                // Listing order, as Activity.relevanceOrder: score descending, earliest start first.
                table.column("relevanceScore", .double).notNull()
                table.column("startTime", .double).notNull()
                table.column("createdAt", .double).notNull()
                table.column("updatedAt", .double).notNull()
                table.column("body", .text).notNull()
            }
            try db.create(index: "activity_deadline", on: "activity", columns: ["deadline"], condition: Column("deadline") != nil)
            try db.create(index: "activity_device_state", on: "activity", columns: ["deviceId", "state"])
            try db.create(index: "activity_app_state", on: "activity", columns: ["bundleId", "state"])
            try db.create(index: "activity_key", on: "activity", columns: ["bundleId", "key"], condition: Column("key") != nil)
            try db.create(table: "event") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("time", .double).notNull()
                table.column("type", .text).notNull()
                table.column("bundleId", .text).notNull()
                table.column("deviceId", .text).notNull()
                table.column("activityId", .text)
                table.column("data", .text).notNull()
            }
            try db.create(index: "event_activity", on: "event", columns: ["activityId", "id"])
            try db.create(index: "event_time", on: "event", columns: ["time"])
        }
        return migrator
    }
}
