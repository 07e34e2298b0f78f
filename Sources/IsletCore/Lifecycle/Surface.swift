import Foundation

/// A place a Live Activity shows in: the iPhone's Lock Screen and Dynamic Island, and since
/// iOS 18 and 26 the paired Apple Watch's Smart Stack, CarPlay's Dashboard, the Mac's menu bar
/// (through iPhone Mirroring), an iPad's Lock Screen and StandBy (docs/surfaces.md).
///
/// The rules of each surface live here and nowhere else: what it draws of a layout, the sizes
/// Apple gives it, and whether it keeps an ended activity. The renderer's frames take their
/// sizes from here, and the display reads which surfaces show an activity from the server.
public enum Surface: String, CaseIterable, Codable, Hashable, Sendable {
    case lockScreen, dynamicIsland, watch, carplay, mac, ipad, standby

    /// The surfaces beyond the iPhone, which `islet render --surface` draws and the display's
    /// panel adds beside the phone.
    public static let beyondThePhone: [Surface] = [.watch, .carplay, .mac, .ipad, .standby]

    /// What a surface draws of a layout.
    public enum Content: String, Sendable {
        /// The Lock Screen view (the `.medium` family).
        case lockScreen
        /// The Dynamic Island's compact, minimal and expanded views, unchanged.
        case island
        /// The `small` region when the layout declares it (`Layout.drawsSmall`), else the compact
        /// leading and trailing views side by side, Apple's fallback.
        case small
        /// The minimal view at the top, and the Lock Screen view scaled 2× to fill the screen.
        case lockScreenScaled
    }

    /// One size a surface comes in, in points (Apple's Human Interface Guidelines).
    public struct Size: Hashable, Sendable {
        /// How `islet render --size` names it: `40mm`, `240x78`, `500`.
        public var name: String
        public var width: Double
        /// `nil` where the height follows the content, 84 to 160 points as on the Lock Screen.
        public var height: Double?
    }

    public var content: Content {
        switch self {
        case .lockScreen, .ipad: .lockScreen
        case .dynamicIsland, .mac: .island
        case .watch, .carplay: .small
        case .standby: .lockScreenScaled
        }
    }

    /// Apple's sizes for the surface, the first the default; the Dynamic Island's and the Mac's
    /// follow the phone's model (`PresentationDocument` draws a 393-point iPhone's).
    public var sizes: [Size] {
        switch self {
        case .lockScreen: [Size(name: "393", width: 371, height: nil), Size(name: "430", width: 408, height: nil)]
        case .dynamicIsland, .mac: []
        // The HIG gives the smallest and the largest watch; the sizes between are not documented.
        case .watch: [Size(name: "49mm", width: 191, height: 81.5), Size(name: "40mm", width: 152, height: 69.5)]
        case .carplay: [Size(name: "240x78", width: 240, height: 78), Size(name: "240x100", width: 240, height: 100), Size(name: "170x78", width: 170, height: 78)]
        case .ipad: [Size(name: "500", width: 500, height: nil), Size(name: "425", width: 425, height: nil)]
        case .standby: [Size(name: "852x393", width: 852, height: 393)]
        }
    }

    /// The size named `name`, or the default one for `nil`.
    public func size(named name: String?) -> Size? {
        guard let name else { return sizes.first }
        return sizes.first { $0.name == name }
    }

    /// Whether an ended activity stays until its dismissal, as on the Lock Screen (up to four
    /// hours, then the dismissal policy's time), or leaves at once as it leaves the island.
    /// The watch, the Mac, the iPad and StandBy keep it; the island and CarPlay drop it.
    public var keepsEndedActivity: Bool {
        switch self {
        case .dynamicIsland, .carplay: false
        case .lockScreen, .watch, .mac, .ipad, .standby: true
        }
    }

    /// Whether the surface has a light appearance: the island, the watch and CarPlay are dark only.
    public var hasLightAppearance: Bool {
        switch self {
        case .dynamicIsland, .watch, .carplay: false
        case .lockScreen, .mac, .ipad, .standby: true
        }
    }

    /// Whether the surface shows `activity` at `now`: a running one everywhere; an ended one where
    /// the surface keeps it, until its dismissal date.
    public func shows(_ activity: Activity, at now: Date) -> Bool {
        switch activity.state {
        case .active, .stale: true
        case .ended: keepsEndedActivity && (activity.dismissAt.map { now < $0 } ?? true)
        case .pending, .dismissed: false
        }
    }

    /// The surfaces that show `activity` at `now`.
    public static func showing(_ activity: Activity, at now: Date) -> [Surface] {
        allCases.filter { $0.shows(activity, at: now) }
    }
}
