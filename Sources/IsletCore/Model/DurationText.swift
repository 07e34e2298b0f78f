import Foundation

/// Reads durations as people write them in configuration: `"8h"`, `"4h30m"`, `"90s"`, `"15m"`,
/// or a plain number of seconds.
public enum DurationText {
    /// The number of seconds `text` means, or `nil` when it is not a duration.
    public static func seconds(_ text: String) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let plain = Double(trimmed) { return plain >= 0 && plain.isFinite ? plain : nil }
        var total: TimeInterval = 0
        var digits = ""
        var sawUnit = false
        for character in trimmed {
            if character.isNumber || character == "." {
                digits.append(character)
                continue
            }
            let unit: TimeInterval
            switch character {
            case "d": unit = 86_400
            case "h": unit = 3600
            case "m": unit = 60
            case "s": unit = 1
            default: return nil
            }
            guard let value = Double(digits) else { return nil }
            total += value * unit
            digits = ""
            sawUnit = true
        }
        return sawUnit && digits.isEmpty && total.isFinite ? total : nil
    }

    /// A duration written the short way (`"8h"`, `"4h30m"`), for messages and samples.
    public static func text(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(seconds)s" }
        var rest = Int(seconds.rounded())
        if rest == 0 { return "0s" }
        var parts = ""
        for (unit, name) in [(86_400, "d"), (3600, "h"), (60, "m"), (1, "s")] where rest >= unit {
            parts += "\(rest / unit)\(name)"
            rest %= unit
        }
        return parts
    }
}
