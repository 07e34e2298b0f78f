import IsletCore

/// Who an API key speaks for.
public enum KeyOwner: Hashable, Sendable {
    /// The server's administrator: manages apps and devices, and may act for any app.
    case admin
    /// One app: sees and changes only its own activities.
    case app(BundleID)
    /// One device's display: reads what the device shows, dismisses its activities and changes
    /// its settings; it starts, updates and ends nothing.
    case device(DeviceID)
}
