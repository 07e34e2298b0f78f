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
    private static func inLanes<T: Sendable>(
        _ count: Int, port: Int, _ make: @escaping @Sendable (HTTPConnection, Int) async throws -> T
    ) async throws -> [T] {
        let lanes = 8
        let made = try await withThrowingTaskGroup(of: [(Int, T)].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    let connection = try await HTTPConnection.connect(port: port)
                    var made: [(Int, T)] = []
                    for index in stride(from: lane, to: count, by: lanes) { made.append((index, try await make(connection, index))) }
                    await connection.close()
                    return made
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        return made.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
