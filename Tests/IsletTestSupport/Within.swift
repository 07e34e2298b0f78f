/// Fails instead of hanging when something that should happen does not, within `seconds` of
/// real time. A guard against a broken build, never a way to wait for a rule.
public func within<T: Sendable>(_ seconds: Double = 10, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(seconds: seconds)
        }
        return value
    }
}

/// What `within` throws when time runs out.
public struct TimedOut: Error, CustomStringConvertible {
    public var seconds: Double
    public var description: String { "Nothing happened within \(seconds) s." }
}
