import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the library tells the backend.
enum Report: Sendable {
    case pushToStart(type: String, token: String)
    case update(activity: String, token: String)
    case state(activity: String, String)
    case signIn(userId: String, signature: String)
    case signOut

    /// What it is kept as among what was reported (`StoredInstallation.reported`): a report equal
    /// to the one kept is not sent again.
    var record: (key: String, value: String) {
        switch self {
        case .pushToStart(let type, let token): ("pushToStart:\(type)", token)
        case .update(let activity, let token): ("update:\(activity)", token)
        case .state(let activity, let state): ("state:\(activity)", state)
        case .signIn(let userId, _): ("user", userId)
        case .signOut: ("user", "")
        }
    }

    /// What it is, for a log line.
    var what: String {
        switch self {
        case .pushToStart(let type, let token): "the push-to-start token of \(type) (\(token.prefix(8))…)"
        case .update(let activity, let token): "the update token of \(activity) (\(token.prefix(8))…)"
        case .state(let activity, let state): "that \(activity) was \(state) on the phone"
        case .signIn(let userId, _): "the sign-in of \(userId)"
        case .signOut: "the sign-out"
        }
    }
}

/// The backend as the library sees it: one installation, registered once and kept, and the
/// reports, each sent until taken. An actor, so a report waits for the registration and two
/// reports never race for the stored record.
actor Backend {
    private let server: URL
    private let clientKey: String
    private let bundleId: String
    private let environment: LiveActivities.Environment
    private let store: any InstallationStore
    private let log: @Sendable (String) -> Void
    private let session: URLSession
    private var installation: StoredInstallation?
    /// The registration under way: reports that come meanwhile wait for it, rather than each
    /// registering (an actor's method is entered again while it awaits the network).
    private var registering: Task<StoredInstallation?, Never>?
    /// Reports asked for and not yet settled (`settled()`).
    private var pending = 0
    private var settledWaiters: [CheckedContinuation<Void, Never>] = []

    /// The longest wait between two tries.
    static let maximumBackoff: Double = 300

    init(
        server: URL, clientKey: String, bundleId: String, environment: LiveActivities.Environment, store: any InstallationStore,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.server = server
        self.clientKey = clientKey
        self.bundleId = bundleId
        self.environment = environment
        self.store = store
        self.log = log
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
        // A credential goes only to the server that issued it.
        installation = store.load().flatMap { $0.server == server.absoluteString && $0.bundleId == bundleId ? $0 : nil }
    }

    nonisolated func say(_ line: String) { log(line) }

    /// The installation, registered with the client key when there is none yet (tried until
    /// Islet takes it); `nil` only for a refusal trying again cannot change.
    @discardableResult
    func register() async -> StoredInstallation? {
        if let installation { return installation }
        if let registering { return await registering.value }
        let registration = Task { await self.registerOnce() }
        registering = registration
        let registered = await registration.value
        registering = nil
        return registered
    }

    /// `register`'s one registration, tried until taken.
    private func registerOnce() async -> StoredInstallation? {
        let body = RegistrationBody(bundleId: bundleId, platform: "ios", environment: environment.rawValue)
        var wait: Double = 1
        let attempt = UUID().uuidString
        while !Task.isCancelled {
            switch await send("POST", "/v1/installations", body: body, key: clientKey, idempotencyKey: attempt) {
            case .taken(let data):
                guard let registered = try? JSONDecoder().decode(RegisteredBody.self, from: data) else {
                    say("Islet's answer to the registration is not one: \(String(decoding: data.prefix(200), as: UTF8.self))")
                    return nil
                }
                let stored = StoredInstallation(
                    server: server.absoluteString, bundleId: bundleId, installationId: registered.installation.id, credential: registered.credential
                )
                store.save(stored)
                installation = stored
                say("registered installation \(stored.installationId) of \(bundleId)")
                return stored
            case .refused(let status, let answer):
                say("Islet refused the registration: \(status) \(answer); not trying again")
                return nil
            case .again(let why):
                say("could not register the installation: \(why); trying again in \(Int(wait)) s")
            }
            try? await Task.sleep(for: .seconds(Self.jittered(wait)))
            wait = min(Self.maximumBackoff, wait * 2)
        }
        return nil
    }

    /// Sends a report until Islet takes it, unless the same one was taken already.
    func report(_ report: Report) async {
        pending += 1
        defer {
            pending -= 1
            if pending == 0 {
                for waiter in settledWaiters { waiter.resume() }
                settledWaiters = []
            }
        }
        var wait: Double = 1
        let attempt = UUID().uuidString
        while !Task.isCancelled {
            guard let installation = await register() else { return }
            let record = report.record
            if installation.reported[record.key] == record.value {
                return say("\(report.what): reported already")
            }
            let (method, path, body) = request(for: report, on: installation)
            switch await send(method, path, body: body, key: installation.credential, idempotencyKey: attempt) {
            case .taken:
                var updated = self.installation ?? installation
                updated.reported[record.key] = record.value
                if case .signIn(let userId, _) = report { updated.userId = userId }
                if case .signOut = report { updated.userId = nil }
                store.save(updated)
                self.installation = updated
                return say("reported \(report.what)")
            case .refused(401, _):
                // The credential is revoked (its client key cut): register again, and send.
                say("Islet no longer knows installation \(installation.installationId); registering again")
                store.clear()
                self.installation = nil
                continue
            case .refused(let status, let answer):
                return say("Islet refused \(report.what): \(status) \(answer); not trying again")
            case .again(let why):
                say("could not report \(report.what): \(why); trying again in \(Int(wait)) s")
            }
            try? await Task.sleep(for: .seconds(Self.jittered(wait)))
            wait = min(Self.maximumBackoff, wait * 2)
        }
    }

    /// Returns once no report is in flight.
    func settled() async {
        guard pending > 0 else { return }
        await withCheckedContinuation { settledWaiters.append($0) }
    }

    /// The route and body of a report.
    nonisolated func request(for report: Report, on installation: StoredInstallation) -> (String, String, any Encodable & Sendable) {
        let device = installation.installationId
        switch report {
        case .pushToStart(let type, let token):
            return ("PUT", "/v1/devices/\(escaped(device))/push-to-start-tokens/\(escaped(type))", TokenBody(token: token, environment: environment.rawValue))
        case .update(let activity, let token):
            return ("PUT", "/v1/activities/\(escaped(activity))/push-token", UpdateTokenBody(token: token, device: device))
        case .state(let activity, let state):
            return ("POST", "/v1/activities/\(escaped(activity))/phone-report", StateBody(state: state))
        case .signIn(let userId, let signature):
            return ("PATCH", "/v1/installations/self", UserBody(userId: userId, userIdSignature: signature))
        case .signOut:
            return ("PATCH", "/v1/installations/self", UserBody(userId: nil, userIdSignature: nil))
        }
    }

    private enum Outcome {
        case taken(Data)
        /// Islet said no, and saying it again will not change that (a 4xx but 408 and 429).
        case refused(Int, String)
        /// No answer, or one that may change: try again.
        case again(String)
    }

    private func send(_ method: String, _ path: String, body: some Encodable, key: String, idempotencyKey: String) async -> Outcome {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        // The same key for each try of one report: a try whose answer was lost is not done twice.
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.httpBody = try? JSONEncoder().encode(body)
        do {
            let (data, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if (200..<300).contains(status) { return .taken(data) }
            let answer = String(decoding: data.prefix(300), as: UTF8.self)
            // The same report's earlier try still runs at the server: its answer comes to the next.
            let inUse = status == 409 && answer.contains("\"idempotencyKeyInUse\"")
            if (400..<500).contains(status), status != 408, status != 429, !inUse { return .refused(status, answer) }
            return .again("\(status) \(answer)")
        } catch {
            return .again(error.localizedDescription)
        }
    }

    private nonisolated func escaped(_ component: String) -> String {
        component.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? component
    }

    /// `seconds`, give or take a fifth: phones that failed together do not all try again together.
    static func jittered(_ seconds: Double) -> Double {
        seconds * Double.random(in: 0.8...1.2)
    }
}

// The bodies Islet takes, as docs/installations.md gives them (and IsletLiveActivitiesTests
// decodes with the server's own types).

struct RegistrationBody: Codable, Sendable {
    var bundleId: String
    var platform: String
    var environment: String
}

struct RegisteredBody: Codable, Sendable {
    struct Installed: Codable, Sendable { var id: String }
    var installation: Installed
    var credential: String
}

struct TokenBody: Codable, Sendable {
    var token: String
    var environment: String
}

struct UpdateTokenBody: Codable, Sendable {
    var token: String
    var device: String
}

struct StateBody: Codable, Sendable {
    var state: String
}

struct UserBody: Codable, Sendable {
    var userId: String?
    var userIdSignature: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // `"userId": null` signs out; the field absent would change nothing.
        try container.encode(userId, forKey: .userId)
        try container.encodeIfPresent(userIdSignature, forKey: .userIdSignature)
    }
}
