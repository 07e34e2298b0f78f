import Foundation
import IsletCore
import IsletEngine
import ServiceLifecycle
import Synchronization

/// The listening sessions (`islet webhooks listen`) open on this node, and the transport that
/// sends their endpoints' events down their WebSockets: each request signed as over HTTP, its
/// answer the one the listener sends back, or a failure after the timeout (docs/webhooks.md,
/// "Listening from a laptop").
public final class WebhookListeners: WebhookTransport {
    private struct Session {
        let outbound: AsyncStream<WebhookListenMessage>.Continuation
        /// Requests sent and not yet answered, by `webhook-id`.
        var waiting: [String: CheckedContinuation<WebhookAnswer, Never>] = [:]
    }

    private let sessions = Mutex([String: Session]())

    public init() {}

    /// Opens an endpoint's session: the requests to write down its WebSocket.
    public func open(_ endpointId: String) -> AsyncStream<WebhookListenMessage> {
        // Unbounded: the dispatcher has at most `WebhookDispatcher.concurrency` requests out per endpoint.
        let (stream, continuation) = AsyncStream<WebhookListenMessage>.makeStream()
        sessions.withLock { $0[endpointId] = Session(outbound: continuation) }
        return stream
    }

    /// The listener's answer to a request.
    public func answer(_ endpointId: String, _ message: WebhookListenMessage) {
        guard let id = message.id, let waiting = sessions.withLock({ $0[endpointId]?.waiting.removeValue(forKey: id) }) else { return }
        let response = message.body.map { String($0.prefix(HTTPWebhookTransport.readLimit)) }
        waiting.resume(returning: WebhookAnswer(status: message.status, error: message.error, latencyMs: 0, response: response))
    }

    /// Ends a session: the requests it had not answered fail.
    public func close(_ endpointId: String) {
        guard let session = sessions.withLock({ $0.removeValue(forKey: endpointId) }) else { return }
        session.outbound.finish()
        for waiting in session.waiting.values {
            waiting.resume(returning: WebhookAnswer(status: nil, error: "the listening session ended", latencyMs: 0, response: nil))
        }
    }

    public func send(_ event: WebhookEvent, to endpoint: WebhookEndpoint, at time: Date, timeout: TimeInterval) async -> WebhookAnswer {
        let started = ContinuousClock.now
        let signed = SignedWebhook(event, for: endpoint, at: time)
        let message = WebhookListenMessage(
            type: .request, id: event.id, headers: Dictionary(signed.headers, uniquingKeysWith: { $1 }),
            body: String(decoding: signed.body, as: UTF8.self)
        )
        var answer = await withCheckedContinuation { (continuation: CheckedContinuation<WebhookAnswer, Never>) in
            let sent = sessions.withLock { sessions -> Bool in
                guard sessions[endpoint.id] != nil else { return false }
                sessions[endpoint.id]!.waiting[event.id] = continuation
                if case .terminated = sessions[endpoint.id]!.outbound.yield(message) { return false }
                return true
            }
            guard sent else {
                _ = sessions.withLock { $0[endpoint.id]?.waiting.removeValue(forKey: event.id) }
                return continuation.resume(returning: WebhookAnswer(status: nil, error: "no listening session for this endpoint here", latencyMs: 0, response: nil))
            }
            // No answer in time: a failure, as an HTTP endpoint's timeout.
            Task {
                try? await Task.sleep(for: .seconds(timeout))
                guard let waiting = self.sessions.withLock({ $0[endpoint.id]?.waiting.removeValue(forKey: event.id) }) else { return }
                waiting.resume(returning: WebhookAnswer(status: nil, error: "no answer within \(Int(timeout)) s", latencyMs: 0, response: nil))
            }
        }
        answer.latencyMs = (ContinuousClock.now - started) / .milliseconds(1)
        return answer
    }
}

/// Sends a listening session's endpoint's events down its session, and every other's with
/// `others` (HTTP).
public final class RoutedWebhookTransport: WebhookTransport, Service {
    public let listeners: WebhookListeners
    private let others: any WebhookTransport

    public init(listeners: WebhookListeners, others: any WebhookTransport) {
        self.listeners = listeners
        self.others = others
    }

    public func send(_ event: WebhookEvent, to endpoint: WebhookEndpoint, at time: Date, timeout: TimeInterval) async -> WebhookAnswer {
        endpoint.isListener
            ? await listeners.send(event, to: endpoint, at: time, timeout: timeout)
            : await others.send(event, to: endpoint, at: time, timeout: timeout)
    }

    public func run() async throws {
        if let service = others as? any Service { try await service.run() } else { try? await gracefulShutdown() }
    }
}

/// A webhook request as Standard Webhooks signs it: its headers and its body.
struct SignedWebhook {
    let headers: [(String, String)]
    let body: [UInt8]

    /// `event` for `endpoint`, signed with the secrets that sign at `time` (the engine's clock),
    /// stamped with the wall clock's time, as the receiver's clock reads it (it refuses one more
    /// than 5 minutes off).
    init(_ event: WebhookEvent, for endpoint: WebhookEndpoint, at time: Date) {
        let timestamp = Int64(Date().timeIntervalSince1970)
        body = Array(event.body.utf8)
        let secrets = endpoint.signingSecrets(at: time).compactMap(WebhookSecret.init)
        headers = [
            ("content-type", "application/json"),
            ("webhook-id", event.id),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", WebhookSignature.header(id: event.id, timestamp: timestamp, body: body, secrets: secrets)),
        ]
    }
}
