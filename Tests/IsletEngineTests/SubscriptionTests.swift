import Foundation
import IsletCore
@testable import IsletEngine
import IsletTestSupport
import Testing

@Suite("Subscriber queues", .hangDetector)
struct SubscriptionTests {
    func event(
        _ id: EventID, _ type: EventType, activity: String? = "A", app: BundleID = "com.example.bike", device: DeviceID = "default"
    ) -> EncodedEvent {
        EncodedEvent(id: id, type: type, time: t0, bundleId: app, deviceId: device, activityId: activity, dataJSON: "{}")
    }

    func subscription(capacity: Int = 100, coalesces: Bool = true) -> Subscription {
        Subscription(id: 1, filter: EventFilter(), coalesces: coalesces, capacity: capacity, onCoalesce: {})
    }

    @Test func newerContentReplacesOlderQueuedContentAndIdsStayIncreasing() async {
        let queue = subscription()
        queue.offer(event(1, .contentUpdated, activity: "A"))
        queue.offer(event(2, .stateChanged, activity: "A"))
        queue.offer(event(3, .contentUpdated, activity: "B"))
        queue.offer(event(4, .contentUpdated, activity: "A"))
        queue.offer(event(5, .alert, activity: "A"))
        queue.offer(event(6, .contentUpdated, activity: "A"))
        #expect(await queue.next() == .events([
            event(2, .stateChanged), event(3, .contentUpdated, activity: "B"), event(5, .alert), event(6, .contentUpdated),
        ]))
    }

    @Test func withoutCoalescingEveryEventIsKept() async {
        let queue = subscription(coalesces: false)
        for id in 1...5 { queue.offer(event(EventID(id), .contentUpdated)) }
        #expect(await queue.next() == .events((1...5).map { event(EventID($0), .contentUpdated) }))
    }

    @Test func aFullQueueFinishesWithOverflowAndLetsGoOfItsEvents() async {
        let queue = subscription(capacity: 3, coalesces: false)
        #expect(queue.offer(event(1, .started)))
        #expect(queue.offer(event(2, .alert)))
        #expect(queue.offer(event(3, .alert)))
        #expect(!queue.offer(event(4, .alert)))
        #expect(queue.queuedCount == 0)
        #expect(await queue.next() == .finished(.overflow))
    }

    @Test func coalescingKeepsASlowReadersQueueAtOneEntryPerActivity() async {
        let queue = subscription(capacity: 50)
        var id: EventID = 0
        for _ in 0..<1000 {
            for activity in ["A", "B", "C"] {
                id += 1
                #expect(queue.offer(event(id, .contentUpdated, activity: activity)))
            }
        }
        #expect(queue.queuedCount == 3)
        // Replaced events give their slots back: the queue's memory stays bounded too.
        #expect(queue.slotCount <= 2 * 3 + 32)
        #expect(await queue.next() == .events([
            event(2998, .contentUpdated, activity: "A"), event(2999, .contentUpdated, activity: "B"),
            event(3000, .contentUpdated, activity: "C"),
        ]))
    }

    @Test func compactionKeepsOrderAndLaterReplacements() async {
        let queue = subscription(capacity: 1000)
        queue.offer(event(1, .started, activity: "A"))
        for id in 2...200 {
            queue.offer(event(EventID(id), .contentUpdated, activity: id % 2 == 0 ? "A" : "B"))
        }
        queue.offer(event(201, .alert, activity: "A"))
        queue.offer(event(202, .contentUpdated, activity: "B"))
        #expect(queue.slotCount < 40)
        #expect(await queue.next() == .events([
            event(1, .started, activity: "A"), event(200, .contentUpdated, activity: "A"), event(201, .alert, activity: "A"),
            event(202, .contentUpdated, activity: "B"),
        ]))
    }

    @Test func idleMarkAndFinishReachAWaitingReader() async {
        let queue = subscription()
        async let delivery = queue.next()
        queue.markIdle()
        #expect(await delivery == .idle)
        queue.offer(event(1, .started))
        queue.finish(.shutdown)
        #expect(await queue.next() == .events([event(1, .started)]))
        #expect(await queue.next() == .finished(.shutdown))
    }

    @Test func cancellingTheReaderFinishesTheSubscription() async {
        let queue = subscription()
        let reader = Task { await queue.next() }
        reader.cancel()
        #expect(await reader.value == .finished(.cancelled))
    }

    @Test func busDeliversOnlyMatchingEventsAndForgetsOverflowedSubscribers() async {
        var settings = StreamSettings()
        settings.bufferSize = 16
        let bus = EventBus(settings: settings, metrics: NoMetrics(), clock: ManualClock(now: t0))
        let everything = bus.subscribe(filter: EventFilter(), coalesces: false)
        let onlyB = bus.subscribe(filter: EventFilter(activityId: "B"))
        #expect(bus.subscriberCount == 2)
        bus.publish((1...20).map { event(EventID($0), .alert, activity: $0 == 20 ? "B" : "A") })
        #expect(await everything.next() == .finished(.overflow))
        #expect(await onlyB.next() == .events([event(20, .alert, activity: "B")]))
        #expect(bus.subscriberCount == 1)
        bus.remove(onlyB)
        #expect(bus.subscriberCount == 0)
    }

    @Test func eachSubscriberGetsWhatItsFilterPassesWhereverItIsIndexed() async {
        let bus = EventBus(settings: StreamSettings(), metrics: NoMetrics(), clock: ManualClock(now: t0))
        let everything = bus.subscribe(filter: EventFilter(), coalesces: false)
        let bikeApp = bus.subscribe(filter: EventFilter(bundleId: "com.example.bike"), coalesces: false)
        let phone = bus.subscribe(filter: EventFilter(deviceId: "phone"), coalesces: false)
        let bikeOnPhone = bus.subscribe(filter: EventFilter(bundleId: "com.example.bike", deviceId: "phone"), coalesces: false)
        let activityB = bus.subscribe(filter: EventFilter(activityId: "B"), coalesces: false)
        let events = [
            event(1, .started, activity: "A"),
            event(2, .started, activity: "B", device: "phone"),
            event(3, .settingsChanged, activity: nil, app: "com.example.ci", device: "phone"),
            event(4, .alert, activity: "C", app: "com.example.ci"),
            event(5, .alert, activity: "B", device: "phone"),
        ]
        bus.publish(events)
        func ids(_ subscription: Subscription) async -> [EventID] {
            guard case .events(let received) = await subscription.next() else { return [] }
            return received.map(\.id)
        }
        #expect(await ids(everything) == [1, 2, 3, 4, 5])
        #expect(await ids(bikeApp) == [1, 2, 5])
        #expect(await ids(phone) == [2, 3, 5])
        #expect(await ids(bikeOnPhone) == [2, 5])
        #expect(await ids(activityB) == [2, 5])
        for subscription in [everything, bikeApp, phone, bikeOnPhone, activityB] { bus.remove(subscription) }
        #expect(bus.subscriberCount == 0)
    }
}
