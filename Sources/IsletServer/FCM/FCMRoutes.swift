import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import IsletEngine
import IsletFCM
import NIOCore
import Synchronization

/// Islet playing Google on the push port (docs/android.md, "Islet as Google"), over HTTP/2 and
/// HTTP/1.1 as Google serves them:
///
/// - `POST /token` — the JWT-bearer grant: an assertion signed by a service account this server
///   issued (`islet fcm service-account`) is exchanged for an access token good for an hour;
/// - `POST /v1/projects/{project}/messages:send` — FCM HTTP v1: the access token, the body as FCM
///   checks it (`FCMSendRequest`), the per-device quota (240 a minute, 5,000 an hour), the
///   faults `apns.faults` plays, then the message handed to the Android phone the token is of.
///
/// Every answer is Google's shape: OAuth's `{"error", "error_description"}` at `/token`, FCM's
/// error body (`FCMError`) at `messages:send`.
struct FCMRoutes {
    let engine: Engine
    let faults: APNsFaults
    private let quotas = DeviceQuotas(.fcmDevice)

    init(engine: Engine, faults: APNsFaults) {
        self.engine = engine
        self.faults = faults
    }

    /// Whether a path is one of Google's: what the push port serves over HTTP/1.1 too.
    static func serves(_ path: String) -> Bool {
        path == "/token" || path.hasPrefix("/token?") || path.hasPrefix("/v1/projects/")
    }

    /// How long an access token lives, as Google's do.
    static let accessTokenLifetime: TimeInterval = 3600

    func add(to router: Router<APNsRequestContext>) -> [String] {
        router.post("token", use: token)
        router.post("v1/projects/:project/:method", use: send)
        return ["POST /token", "POST /v1/projects/{project}/messages:send"]
    }

    // MARK: POST /token

    @Sendable func token(_ request: Request, context: APNsRequestContext) async throws -> Response {
        do {
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: TokenRequest.maximumBody)
            } catch is NIOTooManyBytesError {
                throw OAuthRefusal("invalid_request", "The request body is over \(TokenRequest.maximumBody) bytes.")
            } catch {
                throw OAuthRefusal("invalid_request", "The request body could not be read: \(error).")
            }
            let assertion = try TokenRequest(body: body.readableBytesView).assertion
            let now = engine.clock.now()
            let verifier = AssertionVerifier(accounts: try await engine.issuedAccounts())
            let authority = request.head.authority ?? ""
            let verified = try await verifier.verify(assertion, audience: "https://\(authority)/token", now: now)
            let accessToken = Self.newAccessToken()
            try await engine.keepAccessGrant(AccessGrant(
                hash: Self.hash(accessToken), clientEmail: verified.account.clientEmail, projectId: verified.account.projectId,
                expiresAt: now.addingTimeInterval(Self.accessTokenLifetime)
            ))
            let answer: JSONValue = [
                "access_token": .string(accessToken), "expires_in": .integer(Int64(Self.accessTokenLifetime) - 1), "token_type": "Bearer",
            ]
            return Self.json(answer, status: 200)
        } catch let refusal as OAuthRefusal {
            return Self.json(["error": .string(refusal.error), "error_description": .string(refusal.description)], status: refusal.status)
        } catch let error as IsletError where error.reason == .unavailable {
            return Self.json(["error": "temporarily_unavailable", "error_description": .string(error.message)], status: 503)
        }
    }

    private static func newAccessToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<48).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "ya29.islet-" + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func hash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: POST /v1/projects/{project}/messages:send

    @Sendable func send(_ request: Request, context: APNsRequestContext) async throws -> Response {
        let project = context.parameters.get("project") ?? ""
        do {
            guard context.parameters.get("method") == "messages:send" else {
                throw FCMError(status: 404, errorCode: nil, googleStatus: "NOT_FOUND", message: "No FCM method \(request.uri.path): this server takes POST /v1/projects/{project}/messages:send.")
            }
            let grant = try await authorize(request, project: project)
            if let fault = faults.fault(at: Double.random(in: 0..<1)) {
                return try Self.play(fault, context: context)
            }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: FCMSendRequest.maximumBody)
            } catch is NIOTooManyBytesError {
                throw FCMError(.invalidArgument, "Request contains an invalid argument: the body is over \(FCMSendRequest.maximumBody) bytes.")
            } catch {
                throw FCMError(.invalidArgument, "Request contains an invalid argument: the body could not be read (\(error)).")
            }
            let send = try FCMSendRequest(body: Data(body.readableBytesView))
            let address: FCMAddress
            switch send.message.target {
            case .token(let token): address = .token(token)
            case .fid(let fid): address = .fid(fid)
            case .topic, .condition:
                throw FCMError(
                    .invalidArgument,
                    "Islet sends to registration tokens and installation IDs only: topics and conditions are not emulated (docs/android.md).",
                    field: "message"
                )
            }
            let name = "projects/\(grant.projectId)/messages/\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
            if send.validateOnly {
                return Self.json(["name": .string("projects/\(grant.projectId)/messages/fake_message_id")], status: 200)
            }
            if let wait = quotas.take(address.value, at: engine.clock.now()) {
                var response = FCMError(.quotaExceeded, "Quota exceeded for this device: FCM takes 240 messages a minute and 5,000 an hour to one device.").response
                response.headers[.retryAfter] = "\(Int(wait.rounded(.up)))"
                return response
            }
            let result: PushResult
            do {
                result = try await engine.deliver(AndroidPush(address: address, messageName: name, islet: send.message.data["islet"]))
            } catch is PushRefusal {
                throw FCMError(.unregistered, "Requested entity was not found.")
            }
            if let ignored = result.ignored, result.strict {
                throw FCMError(.invalidArgument, "The phone dropped the message (strict pushes): \(ignored.detail)")
            }
            return Self.json(["name": .string(name)], status: 200)
        } catch let error as FCMError {
            return error.response
        } catch let error as IsletError where error.reason == .unavailable {
            return FCMError(.unavailable, "The service is currently unavailable: \(error.message)").response
        }
    }

    /// The access token's grant: this server's, unexpired, for the project in the path.
    private func authorize(_ request: Request, project: String) async throws -> AccessGrant {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer "),
            let grant = try await engine.accessGrant(hash: Self.hash(String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)))
        else {
            throw FCMError(
                status: 401, errorCode: nil, googleStatus: "UNAUTHENTICATED",
                message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
            )
        }
        guard grant.projectId == project else {
            throw FCMError(
                status: 403, errorCode: nil, googleStatus: "PERMISSION_DENIED",
                message: "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)': the access token is \(grant.projectId)'s."
            )
        }
        return grant
    }

    /// One of Google's failures, played on purpose (`apns.faults`): the message is not handed on.
    private static func play(_ fault: APNsFaults.Kind, context: APNsRequestContext) throws -> Response {
        let detail = "a fault played on purpose (apns.faults)"
        switch fault {
        case .internalServerError:
            return FCMError(.internal, "Internal error encountered: \(detail).").response
        case .serviceUnavailable:
            return FCMError(.unavailable, "The service is currently unavailable: \(detail).").response
        case .tooManyRequests:
            var response = FCMError(.quotaExceeded, "Quota exceeded: \(detail).").response
            response.headers[.retryAfter] = "1"
            return response
        case .close:
            context.connection?.close(promise: nil)
            return FCMError(.unavailable, "The service is currently unavailable: \(detail).").response
        }
    }

    static func json(_ value: JSONValue, status: Int) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(value)) ?? Data()
        return Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}

extension FCMError {
    /// The error as FCM answers it.
    var response: Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
