import NIOCore

/// When an HTTP/1.1 connection's client must have sent what it owes, phase by phase.
///
/// - The first request head: within `head` of connecting.
/// - A later request head: within `idle` of the last response ending (keep-alive).
/// - A request body: within `bodyGrace` of its head, extended by a second for every
///   `minBodyRate` bytes received — so after the grace the body must average at least that
///   rate since its head. Bytes beyond `maxBodySize` extend nothing.
///
/// Reads never reset a deadline, and none runs while the server is answering: an event
/// stream's response lasts as long as it likes. A value: the handler feeds it events and the
/// time, and asks what, if anything, has run out.
struct InboundDeadlines {
    /// The limits, from `ServerSettings`.
    struct Limits {
        var head: TimeAmount
        var idle: TimeAmount
        var bodyGrace: TimeAmount
        var minBodyRate: Int
        var maxBodySize: Int
    }

    /// What the connection is waiting for.
    enum Phase: Equatable {
        /// A request head; `first` on a new connection.
        case head(since: NIODeadline, first: Bool)
        /// The rest of a request's body, `received` bytes of it so far.
        case body(since: NIODeadline, received: Int)
        /// Nothing from the client: the server owes responses.
        case answering
    }

    let limits: Limits
    private(set) var phase: Phase
    /// Requests whose response has not ended.
    private(set) var unanswered = 0

    init(limits: Limits, connectedAt now: NIODeadline) {
        self.limits = limits
        phase = .head(since: now, first: true)
    }

    mutating func headReceived(at now: NIODeadline) {
        unanswered += 1
        phase = .body(since: now, received: 0)
    }

    mutating func bodyReceived(_ bytes: Int) {
        if case .body(let since, let received) = phase {
            phase = .body(since: since, received: received + bytes)
        }
    }

    mutating func requestEnded(at now: NIODeadline) {
        phase = unanswered == 0 ? .head(since: now, first: false) : .answering
    }

    mutating func responseEnded(at now: NIODeadline) {
        unanswered = max(unanswered - 1, 0)
        if unanswered == 0, phase == .answering {
            phase = .head(since: now, first: false)
        }
    }

    /// When the current phase runs out, if it can.
    var deadline: NIODeadline? {
        switch phase {
        case .head(let since, let first):
            return since + (first ? limits.head : limits.idle)
        case .body(let since, let received):
            let counted = Int64(min(received, limits.maxBodySize))
            return since + limits.bodyGrace + .nanoseconds(counted * 1_000_000_000 / Int64(max(limits.minBodyRate, 1)))
        case .answering:
            return nil
        }
    }

    /// Whether the current phase has run out at `now`.
    func hasExpired(at now: NIODeadline) -> Bool {
        deadline.map { $0 <= now } ?? false
    }
}

extension InboundDeadlines.Limits {
    /// The REST port's limits, as configured.
    init(_ server: ServerSettings) {
        self.init(
            head: TimeAmount(seconds: server.requestHeadTimeout), idle: TimeAmount(seconds: server.idleTimeout),
            bodyGrace: TimeAmount(seconds: server.requestBodyTimeout), minBodyRate: server.minBodyRate,
            maxBodySize: server.maxBodySize
        )
    }
}
