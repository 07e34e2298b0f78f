/// An app's bundle identifier, such as `com.example.bike`: names the producer that owns activities.
public typealias BundleID = String

/// A virtual device's identifier. The `default` device exists from the first start.
public typealias DeviceID = String

/// An activity's identifier: a UUID string, as ActivityKit's `Activity.id`.
public typealias ActivityID = String

/// An event's position in the server's single, increasing event sequence.
public typealias EventID = Int64

extension DeviceID {
    /// The device that exists from the first start and receives activities that name none.
    public static let defaultDevice: DeviceID = "default"
}
