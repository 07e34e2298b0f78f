import Foundation
import HTTPTypes
import Hummingbird
import IsletAPNs
import IsletCore
import IsletEngine
import NIOCore
import Synchronization

/// One request to Islet's APNs endpoint, as the console's pushes view shows it: what a provider
/// sent, what it was answered, and what the push did on the devices it reached.
struct APNsRequestEntry: Codable, Sendable {
    /// Its place in this node's sequence of requests, from 1.
    var id: Int64
    /// When it arrived.
    var time: Date
    var method: String
    var path: String
    /// The app it is attributed to: the one it names (`apns-topic` without its
    /// `.push-type.liveactivity` suffix, or the path's), when its provider token verified for
    /// that app. A request without one is no app's: anyone who reaches the port can send it.
    var bundleId: BundleID?
    /// Its headers; `authorization`'s token reduced to its header and claims (the signature left out).
    var headers: [String: String]
    /// The payload, cut at 4 KB (`payloadBytes` says how long it was).
    var payload: String?
    var payloadBytes: Int
    /// Apple's status, and its reason when it refused.
    var status: Int
    var reason: String?
    /// Islet's words for the refusal (`islet-detail`).
    var detail: String?
    /// From the request's arrival to the answer.
    var latencyMs: Double
    /// What a push Islet took did on each device it reached — a broadcast's first
    /// `APNsRequestTrace.outcomesKept` — applied, or dropped with the device's reason. Absent
    /// when Islet took none (a refusal, a channel request).
    var outcomes: [Outcome]?
    /// How many activities a broadcast reached, of which `outcomes` lists the first.
    var reached: Int?

    /// What a push did on one device.
    struct Outcome: Codable, Sendable, Hashable {
        /// The activity it reached; absent when the device refused a push-to-start (its own
        /// history says why).
        var activityId: ActivityID?
        var device: DeviceID
        /// Why the device dropped it, and the drop in words; both absent when it was applied.
        var dropped: IgnoreReason?
        var message: String?
    }

    /// The entry as a reader without a key sees it: the device token in its path, any token
    /// Islet's words repeat, and the channel id it names cut to their first 8 characters.
    var withoutTokens: APNsRequestEntry {
        var entry = self
        entry.path = path.withoutTokens
        entry.detail = detail?.withoutTokens
        entry.headers["apns-channel-id"] = headers["apns-channel-id"].map { String.cut($0) }
        entry.outcomes = outcomes?.map { outcome in
            var outcome = outcome
            outcome.message = outcome.message?.withoutTokens
            return outcome
        }
        return entry
    }
}

/// This node's last requests to its APNs endpoint, in memory: a debugging view, so a busy
/// endpoint writes nothing to the store for it, and a restart forgets it.
///
/// Requests attributed to an app (their provider token verified for it) and the rest are kept
/// in two rings: anyone who reaches the port can send requests without a provider token, and
/// however many they send, they push none of an app's out.
final class APNsRequestLog: Sendable {
    /// The requests kept of those attributed to an app.
    let capacity: Int
    /// The requests kept of the others, which only the operator sees.
    let unattributedCapacity: Int
    private struct State {
        var next: Int64 = 1
        var attributed: [APNsRequestEntry] = []
        var unattributed: [APNsRequestEntry] = []
    }
    private let state = Mutex(State())

    init(capacity: Int = 1_000, unattributedCapacity: Int = 100) {
        self.capacity = capacity
        self.unattributedCapacity = unattributedCapacity
    }

    /// Keeps an entry (its `id` given here) in its ring, forgetting that ring's oldest beyond
    /// its capacity.
    func record(_ entry: APNsRequestEntry) {
        state.withLock { state in
            var entry = entry
            entry.id = state.next
            state.next += 1
            if entry.bundleId == nil {
                Self.keep(entry, in: &state.unattributed, capacity: unattributedCapacity)
            } else {
                Self.keep(entry, in: &state.attributed, capacity: capacity)
            }
        }
    }

    private static func keep(_ entry: APNsRequestEntry, in ring: inout [APNsRequestEntry], capacity: Int) {
        ring.append(entry)
        if ring.count > capacity { ring.removeFirst(ring.count - capacity) }
    }

    /// The entries kept, of one app or (`nil`) all, oldest first.
    func entries(of bundleId: BundleID?) -> [APNsRequestEntry] {
        state.withLock { state in
            guard let bundleId else { return (state.attributed + state.unattributed).sorted { $0.id < $1.id } }
            return state.attributed.filter { $0.bundleId == bundleId }
        }
    }
}

/// Records every request to the APNs endpoint and its answer in the log. Outermost, so it sees
/// refusals as Apple's statuses once `APNsErrorMiddleware` has made them so. The payload is
/// copied as the route reads it, never read ahead: a request refused from its headers is
/// answered at once, as before, and its log line has no payload.
struct APNsRequestRecorder: RouterMiddleware {
    typealias Context = APNsRequestContext
    let log: APNsRequestLog
    let clock: any WallClock
    static let payloadShown = 4 * 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var entry = Self.entry(method: request.method, path: request.uri.path, fields: request.headers, at: clock.now())
        // A token request's body is a signed assertion, good for an access token for an hour:
        // its length is logged, never its text.
        let payload = PayloadCopy(keeping: request.uri.path == "/token" ? 0 : Self.payloadShown)
        defer { log.record(Self.finished(entry, startedAt: started, payload: payload, trace: context.trace)) }
        do {
            var request = request
            request.body = RequestBody(asyncSequence: request.body.map { buffer in
                payload.add(buffer)
                return buffer
            })
            let response = try await next(request, context)
            entry.status = Int(response.status.code)
            return response
        } catch let error as APNsError {
            entry.status = error.statusCode
            entry.reason = error.reason
            entry.detail = error.detail
            throw error
        } catch {
            entry.status = 500
            entry.reason = "InternalServerError"
            throw error
        }
    }

    /// A request's entry as it arrives, its answer not known yet.
    static func entry(method: HTTPRequest.Method, path: String, fields: HTTPFields, at time: Date) -> APNsRequestEntry {
        APNsRequestEntry(
            id: 0, time: time, method: method.rawValue, path: path, bundleId: bundleId(path: path, fields: fields),
            headers: headers(fields), payload: nil, payloadBytes: 0, status: 0, reason: nil, detail: nil, latencyMs: 0, outcomes: nil,
            reached: nil
        )
    }

    /// The entry once its request is answered (its status and refusal set): how long it took,
    /// the payload's first bytes, and what the routes learnt of it.
    static func finished(_ entry: APNsRequestEntry, startedAt started: ContinuousClock.Instant, payload: PayloadCopy, trace: APNsRequestTrace) -> APNsRequestEntry {
        var entry = entry
        let elapsed = (ContinuousClock.now - started).components
        entry.latencyMs = Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
        (entry.payload, entry.payloadBytes) = payload.taken
        entry.bundleId = trace.app(named: entry.bundleId)
        (entry.outcomes, entry.reached) = trace.pushed
        return entry
    }

    /// The app a request names: its topic's bundle id, or the one in a broadcast's or channel's path.
    static func bundleId(path: String, fields: HTTPFields) -> BundleID? {
        if let topic = fields[HTTPField.Name("apns-topic")!] {
            return topic.hasSuffix(".push-type.liveactivity") ? String(topic.dropLast(".push-type.liveactivity".count)) : topic
        }
        let parts = path.split(separator: "/")
        guard let apps = parts.firstIndex(of: "apps"), apps + 1 < parts.count else { return nil }
        return String(parts[apps + 1])
    }

    /// The headers as shown: the provider token's header and claims, never its signature.
    static func headers(_ fields: HTTPFields) -> [String: String] {
        var shown: [String: String] = [:]
        for field in fields {
            let name = field.name.canonicalName
            shown[name] = name == "authorization" ? readableToken(field.value) : String(field.value.prefix(512))
        }
        return shown
    }

    /// The provider token last shown, and how: a provider reuses one for up to an hour (Apple
    /// refuses a new one more often than every 20 minutes), so decoding it once per request was a
    /// twentieth of the endpoint's CPU.
    private static let lastToken = Mutex<(value: String, shown: String)?>(nil)

    /// `bearer <JWT>` as its decoded header and claims.
    static func readableToken(_ value: String) -> String {
        if let last = lastToken.withLock({ $0 }), last.value == value { return last.shown }
        let shown = decodedToken(value)
        lastToken.withLock { $0 = (value, shown) }
        return shown
    }

    private static func decodedToken(_ value: String) -> String {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return "(not a bearer token)" }
        let segments = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return "bearer (not a JSON Web Token)" }
        let decoded = segments.prefix(2).map { segment -> String in
            guard let data = Base64URL.decode(String(segment)) else { return "?" }
            return String(decoding: data.prefix(512), as: UTF8.self)
        }
        return "bearer " + decoded.joined(separator: " ") + " (signature left out)"
    }
}

/// The first bytes of a payload as its reader reads them, and how many there were.
final class PayloadCopy: Sendable {
    private let keeping: Int
    private let state = Mutex<(bytes: [UInt8], count: Int)>(([], 0))

    init(keeping: Int) {
        self.keeping = keeping
    }

    func add(_ buffer: ByteBuffer) {
        state.withLock { state in
            state.count += buffer.readableBytes
            let room = keeping - state.bytes.count
            if room > 0 { state.bytes += buffer.readableBytesView.prefix(room) }
        }
    }

    /// The payload read so far (`nil` when none was), and its length.
    var taken: (String?, Int) {
        state.withLock { state in
            (state.count == 0 ? nil : String(decoding: state.bytes, as: UTF8.self), state.count)
        }
    }
}
