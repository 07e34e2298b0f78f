import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// Sends finished spans to the collector in batches (the OpenTelemetry batch span processor):
/// a span waits at most `scheduleDelay`, a full batch goes at once, at most `maxQueueSize` wait
/// (beyond, new ones are dropped and counted), one request at a time with `timeout`. A collector
/// that is down or slow costs spans, never a request's time: `enqueue` only appends. On
/// shutdown what waits is sent, within one timeout.
public final class SpanExporter: Service, Sendable {
    private let settings: TraceSettings
    private let logger: Logger
    private let queue = Mutex(Queue())

    private struct Queue {
        var spans: [FinishedSpan] = []
        var dropped = 0
    }

    public init(settings: TraceSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// A span to send: appended, or dropped when the queue is full.
    func enqueue(_ span: FinishedSpan) {
        queue.withLock { queue in
            if queue.spans.count >= settings.maxQueueSize {
                queue.dropped += 1
            } else {
                queue.spans.append(span)
            }
        }
    }

    public func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .init(settings.timeout), read: .init(settings.timeout))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        // The queue is looked at every few milliseconds (at most every `scheduleDelay`): a full
        // batch goes without waiting for the delay, and no signal has to cross from the spans'
        // threads.
        let tick = min(settings.scheduleDelay, .milliseconds(50))
        await cancelWhenGracefulShutdown {
            var lastSent = ContinuousClock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                let due = ContinuousClock.now - lastSent >= self.settings.scheduleDelay
                while let batch = self.take(whole: !due) {
                    await self.send(batch, with: client)
                    lastSent = .now
                }
                if due { lastSent = .now }
            }
        }
        // Stopping: what waits is sent now.
        while let batch = take(whole: false) {
            await send(batch, with: client)
        }
        try? await client.shutdown()
    }

    /// The next batch: a whole one only, or whatever waits; `nil` when there is none.
    private func take(whole: Bool) -> [FinishedSpan]? {
        let (batch, dropped) = queue.withLock { queue -> ([FinishedSpan]?, Int) in
            let dropped = queue.dropped
            queue.dropped = 0
            guard !queue.spans.isEmpty, !whole || queue.spans.count >= settings.maxBatchSize else { return (nil, dropped) }
            let batch = Array(queue.spans.prefix(settings.maxBatchSize))
            queue.spans.removeFirst(batch.count)
            return (batch, dropped)
        }
        if dropped > 0 {
            logger.warning("Dropped spans: more finished than the queue holds (OTEL_BSP_MAX_QUEUE_SIZE)", metadata: ["spans": "\(dropped)"])
        }
        return batch
    }

    private func send(_ batch: [FinishedSpan], with client: HTTPClient) async {
        var request = HTTPClientRequest(url: settings.endpoint)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-protobuf")
        for (name, value) in settings.headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: OTLPTraceRequest.encode(batch, resource: settings.resource)))
        do {
            let response = try await client.execute(request, timeout: .init(settings.timeout))
            _ = try await response.body.collect(upTo: 1 << 20)
            if response.status.code / 100 != 2 {
                logger.warning(
                    "The trace collector refused spans", metadata: ["status": "\(response.status.code)", "spans": "\(batch.count)", "endpoint": "\(settings.endpoint)"]
                )
            }
        } catch {
            logger.warning("Spans not sent: the trace collector did not answer", metadata: ["error": "\(error)", "spans": "\(batch.count)", "endpoint": "\(settings.endpoint)"])
        }
    }
}
