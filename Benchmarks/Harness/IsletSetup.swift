import Foundation
import NIOCore
import NIOHTTP1

/// Creating what a measurement updates.
enum IsletSetup {
    /// Creates an app; returns its key.
    static func app(on connection: HTTPConnection, admin: String, bundleId: String) async throws -> String {
        let (status, body) = try await connection.send(
            .POST, "/v1/apps", headers: [("Authorization", "Bearer \(admin)")], body: ByteBuffer(string: #"{"bundleId":"\#(bundleId)"}"#)
        )
        guard status == 201, let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
            let key = json["apiKey"] as? String
        else { throw HarnessError("creating the app: \(status) \(String(buffer: body))") }
        return key
    }

    /// Starts `count` activities over a few connections, activity `i` on device `device(i)`;
    /// returns their ids, in order.
    static func activities(_ count: Int, port: Int, key: String, device: @escaping @Sendable (Int) -> String) async throws -> [String] {
        try await inLanes(count, port: port) { connection, index in
            let body = #"{"attributesType":"Bench","attributes":{},"device":"\#(device(index))","content":{"state":{"speed":0,"seq":0}}}"#
            let (status, answer) = try await connection.send(
                .POST, "/v1/activities", headers: [("Authorization", "Bearer \(key)")], body: ByteBuffer(string: body)
            )
            guard status == 201, let json = try JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any],
                let id = json["id"] as? String
            else { throw HarnessError("starting an activity: \(status) \(String(buffer: answer))") }
            return id
        }
    }

    /// Creates devices `d0` … `d<count-1>`.
    static func devices(_ count: Int, port: Int, admin: String) async throws {
        _ = try await inLanes(count, port: port) { connection, index in
            let (status, answer) = try await connection.send(
                .POST, "/v1/devices", headers: [("Authorization", "Bearer \(admin)")], body: ByteBuffer(string: #"{"id":"d\#(index)"}"#)
            )
            guard status == 201 else { throw HarnessError("creating a device: \(status) \(String(buffer: answer))") }
        }
    }

    /// Runs `make` for indexes 0..<count over eight connections at once; the results in index order.
    static func inLanes<T: Sendable>(
        _ count: Int, port: Int, _ make: @escaping @Sendable (HTTPConnection, Int) async throws -> T
    ) async throws -> [T] {
        let made = try await Lanes.run(count, width: 8) { indexes in
            let connection = try await HTTPConnection.connect(port: port)
            var made: [(Int, T)] = []
            for index in indexes { made.append((index, try await make(connection, index))) }
            await connection.close()
            return made
        }
        return made.sorted { $0.0 < $1.0 }.map(\.1)
    }
}

/// Work split over lanes that run at once.
enum Lanes {
    /// Runs `lane` `width` times at once, lane k given the indexes k, k + width, … below `count`;
    /// returns what they made, in no set order.
    static func run<T: Sendable>(
        _ count: Int, width: Int, _ lane: @escaping @Sendable (StrideTo<Int>) async throws -> [T]
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: [T].self) { group in
            for index in 0..<min(width, count) {
                group.addTask { try await lane(stride(from: index, to: count, by: width)) }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }
}
