import Foundation
import HTTPTypes
import Hummingbird
import IsletCore
import IsletRender
import IsletEngine

/// The web display: the page at `/` (the default device) and `/devices/{id}`, its files, and
/// `GET /v1/devices/{id}/display`, everything a device shows in one answer.
///
/// The page asks for the snapshot, then follows the device's event stream from the snapshot's
/// event id and asks again after each change: the server decides what is shown and in which
/// order, the page only draws and animates.
struct DisplayRoutes {
    let engine: Engine

    func add(to router: Router<IsletRequestContext>) {
        router.get("/") { _, _ in try Self.file("display.html") }
        router.get("devices/:id") { _, _ in try Self.file("display.html") }
        router.get("display/:file") { _, context in
            try Self.file(try context.parameters.require("file"))
        }
        router.get("v1/devices/:id/display", use: snapshot)
        // The Scripting app's LiveActivity API for web pages (docs/islet-js.md).
        router.get("islet.js") { _, _ in try Self.file("islet.js") }
    }

    /// The states a display shows: ended activities stay on the Lock Screen until dismissed.
    static let shownStates: Set<ActivityState> = [.active, .stale, .ended]

    /// What one device shows, in relevance order, with the settings its panel edits.
    struct Snapshot: Encodable {
        struct Shown: Encodable {
            var id: ActivityID
            var bundleId: BundleID
            var appName: String
            var attributesType: String
            var state: ActivityState
            var relevanceScore: Double
            /// The presentation in each of its system frames, as HTML: the iPhone's presentations
            /// (`lockScreen`, `compact`, `minimal`, `expanded`) and the other surfaces' (`watch`,
            /// `carplay`, `mac`, `ipad`, `standby`).
            var frames: [String: String]
            /// The surfaces that show it now (`Surface.shows`): an ended activity has left the
            /// island and CarPlay, and stays on the others until its dismissal.
            var surfaces: [Surface]
            /// On an Android phone: the Live Update it shows.
            var android: AndroidShown?
        }
        struct AppEntry: Encodable {
            var bundleId: BundleID
            var name: String
            var activitiesEnabled: Bool
            var frequentUpdates: Bool
            /// On an Android phone: whether the app is reached by its Firebase installation ID.
            var fcmInstallationIdEnabled: Bool?
        }
        var device: Device
        /// The last event the snapshot includes: follow the stream from here.
        var eventId: EventID
        var activities: [Shown]
        var apps: [AppEntry]
    }

    @Sendable func snapshot(_ request: Request, context: IsletRequestContext) async throws -> Response {
        let deviceId = try context.parameters.require("id")
        try context.requireDisplay(of: deviceId)
        let display = try await engine.display(deviceId: deviceId, states: Self.shownStates, limit: 64)
        let names = Dictionary(display.apps.map { ($0.bundleId, $0.name) }) { first, _ in first }
        let now = engine.clock.now()
        let shown = display.activities.map { activity, presentation in
            Snapshot.Shown(
                id: activity.id, bundleId: activity.bundleId, appName: names[activity.bundleId] ?? activity.bundleId,
                attributesType: activity.attributesType, state: activity.state, relevanceScore: activity.content.relevanceScore,
                frames: Self.frames(presentation),
                surfaces: Surface.showing(activity, at: now),
                android: display.android[activity.id]
            )
        }
        let apps = display.settings.map {
            Snapshot.AppEntry(
                bundleId: $0.bundleId, name: names[$0.bundleId] ?? $0.bundleId,
                activitiesEnabled: $0.activitiesEnabled, frequentUpdates: $0.frequentUpdates,
                fcmInstallationIdEnabled: display.device.platform == .android ? $0.fcmInstallationId != nil : nil
            )
        }
        return try Response.json(Snapshot(device: display.device, eventId: display.eventId, activities: shown, apps: apps))
    }

    /// The frames the page draws: the iPhone's presentations, and each other surface's frame.
    static func frames(_ presentation: Presentation) -> [String: String] {
        var frames = Dictionary(uniqueKeysWithValues: PresentationDocument.Kind.allCases.map {
            ($0.rawValue, PresentationDocument.frame(presentation, $0))
        })
        for surface in Surface.beyondThePhone {
            frames[surface.rawValue] = PresentationDocument.frame(presentation, on: surface)
        }
        return frames
    }

    /// The display's own files, and the renderer's stylesheets and script it shares.
    static func file(_ name: String) throws -> Response {
        let text: String? =
            switch name {
            case "presentation.css": Renderer.stylesheet
            case "chrome.css": Renderer.chromeStylesheet
            case "presentation.js": Renderer.script
            default: EmbeddedFiles.files[name]
            }
        let pathExtension = (name as NSString).pathExtension
        guard let text, let type = contentTypes[pathExtension] else {
            throw IsletError(.routeNotFound, "The display has no file \(name).")
        }
        var headers: HTTPFields = [.contentType: type, .cacheControl: "no-cache", .xContentTypeOptions: "nosniff"]
        if pathExtension == "html" {
            headers[.contentSecurityPolicy] = pagePolicy
            headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
            headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: .init(string: text)))
    }

    /// The display's Content-Security-Policy: its own scripts, styles and connections only,
    /// never framed (a page that frames it could trick a click into a dismissal). Inline styles
    /// are allowed because presentations are positioned with `style` attributes; every value
    /// in them is written by the renderer, never taken from a payload.
    static let pagePolicy = [
        "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
        "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
    ].joined(separator: "; ")

    static let contentTypes = [
        "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8",
    ]
}
