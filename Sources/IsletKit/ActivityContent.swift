import Foundation

/// A Live Activity's content: its state, when it goes stale, and how relevant it is.
public struct ActivityContent<State: Decodable & Encodable & Hashable>: Hashable {
    /// The content state.
    public var state: State
    /// When the content is out of date; the system shows it as stale from then on.
    public var staleDate: Date?
    /// Orders activities on the Lock Screen and in the Dynamic Island: the highest leads.
    public var relevanceScore: Double

    /// Creates content.
    public init(state: State, staleDate: Date?, relevanceScore: Double = 0.0) {
        self.state = state
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }
}

extension ActivityContent: Sendable where State: Sendable {}
