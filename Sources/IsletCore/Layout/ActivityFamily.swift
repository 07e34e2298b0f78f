/// A widget family a Live Activity is drawn in beyond the iPhone (ActivityKit's
/// `ActivityFamily`), as a layout declares them in `supplementalFamilies`.
///
/// `.medium` is the Lock Screen view, drawn on the iPhone, the iPad and the Mac; `.small` is the
/// layout's `small` region, drawn on the Apple Watch's Smart Stack and in CarPlay. A widget that
/// does not declare `.small` is drawn there with its compact leading and trailing views.
public enum ActivityFamily: String, CaseIterable, Codable, Hashable, Sendable {
    case small, medium
}
