/// An alerting update's text, as ActivityKit's `AlertConfiguration`: lights the screen, shows
/// the expanded presentation or a banner, and plays a sound.
public struct Alert: Codable, Hashable, Sendable {
    /// The alert's title.
    public var title: String
    /// The alert's body.
    public var body: String
    /// `"default"` or the name of a sound file; `nil` for no sound.
    public var sound: String?

    /// Creates an alert.
    public init(title: String, body: String, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}
