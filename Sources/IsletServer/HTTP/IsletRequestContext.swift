import Hummingbird
import HummingbirdWebSocket
import IsletCore
import IsletEngine
import NIOCore

/// The context of every request: who the API key speaks for, once `Authentication` has read it.
public struct IsletRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    /// Who the request's API key speaks for; `nil` when it sent none.
    public var owner: KeyOwner?
    /// Whether a request with no key may read and act as any device's display (`KeylessAccess`:
    /// the server listens on loopback only, and the request cannot come from another web page).
    var keyless = KeylessAccess.needsKey
    /// The connection, so a stream whose reader stopped reading can be cut off.
    let channel: any Channel
    /// Where `GET /v1/events` hands its stream, when the connection's `EventStreamHandler` took
    /// the request.
    var eventStreamHandover: EventStreamHandover?

    public init(source: Source) {
        coreContext = CoreRequestContextStorage(source: source)
        webSocket = WebSocketHandlerReference()
        channel = source.channel
    }

    /// The key's owner, or `unauthorized` when the request sent no key.
    func requireOwner() throws -> KeyOwner {
        guard let owner else {
            throw IsletError(.unauthorized, "This route needs an API key: send \"Authorization: Bearer <key>\".")
        }
        return owner
    }

    /// Succeeds only for the admin key.
    func requireAdmin() throws {
        guard try requireOwner() == .admin else {
            throw IsletError(.forbidden, "Only the admin key may do this.")
        }
    }

    /// The app an app key speaks for, or `nil` for the admin (who may act for any app).
    func appScope() throws -> BundleID? {
        switch try requireOwner() {
        case .admin: nil
        case .app(let bundleId): bundleId
        case .device: throw Self.displayOnly
        case .client: throw Self.clientKeyOnly
        case .installation: throw Self.installationOnly
        }
    }

    /// The apps the people who run Islet may look at and act on through the console: an app
    /// key's own, or every app (`nil`) for the admin key — and, on a server that listens on
    /// loopback only, for a request with no key that no other web page could have sent
    /// (`KeylessAccess`), which is then shown no push tokens (`showsTokens`).
    func operatorScope() throws -> BundleID? {
        if owner == nil {
            switch keyless {
            case .granted: return nil
            case .refused(let why): throw IsletError(.forbidden, why)
            case .needsKey: break
            }
        }
        return try appScope()
    }

    /// Succeeds for the admin key, and for the console without a key on a loopback server.
    func requireOperator() throws {
        if try operatorScope() != nil {
            throw IsletError(.forbidden, "Only the admin key may do this.")
        }
    }

    /// Whether answers may carry push tokens: to a key's holder, not to a keyless request.
    var showsTokens: Bool { owner != nil }

    /// Succeeds when the request may see and act as `deviceId`'s display: the admin key, that
    /// device's key, or no key at all on a server that listens on loopback only.
    func requireDisplay(of deviceId: DeviceID) throws {
        try requireSomeDisplay(naming: deviceId)
        if case .device(let own) = owner, own != deviceId {
            throw IsletError(.forbidden, "This key belongs to device \(own)'s display; it cannot see \(deviceId).")
        }
    }

    /// Succeeds when the request may act as some device's display: the admin key, a device's
    /// key, or no key where the keyless display is let in (`KeylessAccess`). A route that must
    /// look an activity up to learn its device asks this first, so that what it answers everyone
    /// else is the same whether the activity exists or not.
    ///
    /// - Parameter deviceId: The device the request names, for the answer's advice.
    func requireSomeDisplay(naming deviceId: DeviceID? = nil) throws {
        switch owner {
        case .admin, .device: return
        case .app: throw IsletError(.forbidden, "An app key cannot act as a device's display; use the device's key.")
        case .client: throw Self.clientKeyOnly
        case .installation: throw Self.installationOnly
        case nil:
            switch keyless {
            case .granted: return
            case .needsKey:
                throw IsletError(
                    .unauthorized,
                    "This server lets no display in without a key (\(KeylessAccess.whyKeysAreNeeded)): run \"islet devices key \(deviceId ?? "<device>")\" and open the address it prints."
                )
            case .refused(let why): throw IsletError(.forbidden, why)
            }
        }
    }

    /// The app the console looks at and acts on (`operatorScope`): an app key's own, any for
    /// the admin key and for the keyless console on a loopback server.
    func operatedApp(requested bundleId: BundleID) throws -> BundleID {
        if let own = try operatorScope(), own != bundleId { throw Self.anotherApp(bundleId, keyOf: own) }
        return bundleId
    }

    /// An app key naming another app.
    static func anotherApp(_ requested: BundleID, keyOf own: BundleID) -> IsletError {
        IsletError(.forbidden, "This key belongs to \(own); it cannot act for \(requested).")
    }

    static let displayOnly = IsletError(
        .forbidden, "A device key only reads its display, dismisses its activities and changes its settings."
    )

    /// A client key (`pk_…`) anywhere but `POST /v1/installations`.
    static let clientKeyOnly = IsletError(
        .forbidden, "A client key only registers installations (POST /v1/installations); what an installation reports needs its credential."
    )

    /// An installation's credential anywhere but its own routes (docs/installations.md).
    static let installationOnly = IsletError(
        .forbidden, "An installation's credential only reports its own tokens and its activities' states, and reads its own settings."
    )

    /// The app a request acts for: an app key's own app, or the admin's explicit choice.
    ///
    /// - Parameter requested: The `bundleId` the request names, if any.
    func actingApp(requested: BundleID?) throws -> BundleID {
        switch try requireOwner() {
        case .admin:
            guard let requested else {
                throw IsletError(
                    .invalidRequest,
                    "With the admin key, name the app: add \"bundleId\" to the request (islet start --app), or use the app's key."
                )
            }
            return requested
        case .app(let bundleId):
            if let requested, requested != bundleId { throw Self.anotherApp(requested, keyOf: bundleId) }
            return bundleId
        case .device:
            throw Self.displayOnly
        case .client:
            throw Self.clientKeyOnly
        case .installation:
            throw Self.installationOnly
        }
    }

    /// The installation a request's credential speaks for, or `nil` for another caller.
    var installation: (id: String, bundleId: BundleID)? {
        if case .installation(let id, let bundleId) = owner { return (id, bundleId) }
        return nil
    }

    /// For an installation's credential reporting on `deviceId` (docs/installations.md): its
    /// app, when the device is its own — another device is not found, as one that does not
    /// exist, and another app is refused. `nil` for any other caller, whose route goes on as
    /// it would.
    func installationReporting(on deviceId: DeviceID, for requested: BundleID?) throws -> BundleID? {
        guard let (own, bundleId) = installation else { return nil }
        guard deviceId == own else { throw IsletError(.deviceNotFound, "No device \(deviceId.prefix(64)).") }
        if let requested, requested != bundleId { throw Self.anotherApp(requested, keyOf: bundleId) }
        return bundleId
    }
}
