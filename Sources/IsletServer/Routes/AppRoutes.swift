import Foundation
import Hummingbird
import IsletCore
import IsletEngine

/// `/v1/apps` and `/v1/devices`: the admin's management of producers and virtual devices, and
/// per-app Live Activity settings on each device.
struct AppRoutes {
    let engine: Engine
    let keys: KeyRing
    let maxBodySize: Int

    func add(to router: Router<IsletRequestContext>) {
        router.post("v1/apps", use: createApp)
        router.get("v1/apps", use: listApps)
        router.get("v1/apps/:bundleId", use: getApp)
        router.post("v1/apps/:bundleId/key", use: issueAppKey)
        router.post("v1/devices", use: createDevice)
        router.get("v1/devices", use: listDevices)
        router.post("v1/devices/:id/key", use: issueDeviceKey)
        router.get("v1/devices/:id/settings", use: getSettings)
        router.put("v1/devices/:id/settings", use: putSettings)
    }

    @Sendable func createApp(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let body = try await request.decodeJSON(CreateAppBody.self, limit: maxBodySize)
        let app = App(bundleId: body.bundleId, name: body.name ?? body.bundleId, createdAt: engine.clock.now())
        let key = KeyRing.generate(for: .app(app.bundleId))
        try await engine.createApp(app, keyHash: KeyRing.hash(key))
        return try Response.json(CreatedApp(app: app, apiKey: key), status: .created)
    }

    @Sendable func listApps(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let page = try request.page(of: BundleID.self)
        let apps: [App] =
            if let own = try context.operatorScope() {
                [try await engine.app(own)]
            } else {
                try await engine.apps()
            }
        return try Response.json(Listing("apps", page.page(ofAll: apps) { $0.bundleId }))
    }

    @Sendable func getApp(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let bundleId = try context.parameters.require("bundleId")
        if let own = try context.operatorScope(), own != bundleId {
            throw IsletError(.appNotFound, "No app \(bundleId).")
        }
        return try Response.json(try await engine.app(bundleId))
    }

    @Sendable func createDevice(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let body = try await request.decodeJSON(CreateDeviceBody.self, limit: maxBodySize)
        let device = Device(id: body.id, name: body.name ?? body.id, createdAt: engine.clock.now(), platform: body.platform ?? .ios)
        try await engine.createDevice(device)
        return try Response.json(device, status: .created)
    }

    @Sendable func listDevices(_ request: Request, context: IsletRequestContext) async throws -> Response {
        // Any key (a display's too), or the console without one on a loopback server; an app's
        // installations to its own key only (docs/installations.md), and to the operator's.
        let installations: Engine.InstallationsShown
        switch context.owner {
        case nil: _ = try context.operatorScope(); installations = .all
        case .admin: installations = .all
        case .app(let bundleId): installations = .of(bundleId)
        case .device: installations = .none
        case .client: throw IsletRequestContext.clientKeyOnly
        case .installation: throw IsletRequestContext.installationOnly
        }
        return try Response.json(Listing("devices", try await engine.devices(try request.page(of: DeviceID.self), installations: installations)))
    }

    @Sendable func issueAppKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let bundleId = try context.parameters.require("bundleId")
        let key = try await keys.issueAppKey(bundleId: bundleId)
        return try Response.json(CreatedApp(app: try await engine.app(bundleId), apiKey: key), status: .created)
    }

    @Sendable func issueDeviceKey(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireAdmin()
        let deviceId = try context.parameters.require("id")
        let key = try await keys.issueDeviceKey(deviceId: deviceId)
        return try Response.json(IssuedDeviceKey(deviceId: deviceId, key: key), status: .created)
    }

    @Sendable func getSettings(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let deviceId = try context.parameters.require("id")
        var bundleId = request.query("bundleId")
        if case .app(let own) = context.owner {
            // An app reads its own settings on any device, as ActivityAuthorizationInfo does.
            bundleId = own
        } else if let installed = try context.installationReporting(on: deviceId, for: bundleId) {
            // An installation its own app's, on its own device: no token Islet issued it as the device.
            let settings = try await engine.settings(deviceId: deviceId, bundleId: installed)
            return try Response.json(["settings": settings.map(\.withoutTokens)])
        } else {
            try context.requireDisplay(of: deviceId)
        }
        let settings = try await engine.settings(deviceId: deviceId, bundleId: bundleId)
        return try Response.json(["settings": context.owner == nil ? settings.map(\.withoutTokens) : settings])
    }

    @Sendable func putSettings(_ request: Request, context: IsletRequestContext) async throws -> Response {
        try context.requireDisplay(of: try context.parameters.require("id"))
        let body = try await request.decodeJSON(SettingsBody.self, limit: maxBodySize)
        guard let bundleId = body.bundleId else {
            throw IsletError(.invalidRequest, "Name the app whose settings change: add \"bundleId\".")
        }
        let settings = try await engine.updateSettings(
            deviceId: try context.parameters.require("id"), bundleId: bundleId,
            activitiesEnabled: body.activitiesEnabled, frequentUpdates: body.frequentUpdates,
            fcmInstallationIdEnabled: body.fcmInstallationIdEnabled
        )
        return try Response.json(context.owner == nil ? settings.withoutTokens : settings)
    }
}
