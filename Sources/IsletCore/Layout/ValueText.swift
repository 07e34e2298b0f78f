import Foundation

/// Turns resolved values into the text a view shows, as iOS formats them (in the `en_US_POSIX`
/// manner: the display re-formats dates in its own locale and time zone). The web renderer and
/// the Android notification (`AndroidLayout`) draw values through it alike.
public enum ValueText {
    /// A value shown without a format: strings as they are, numbers without a needless `.0`,
    /// anything else as compact JSON.
    public static func plain(_ value: JSONValue) -> String {
        switch value {
        case .null: ""
        case .bool(let flag): flag ? "true" : "false"
        case .integer(let integer): String(integer)
        case .number(let number): number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let text): text
        case .array, .object: compactJSON(value)
        }
    }

    /// A number with `precision` decimals (or as it is), thousands grouped, and a unit.
    public static func number(_ number: Double, precision: Int?, unit: String?) -> String {
        let digits: String
        if let precision {
            digits = String(format: "%.\(precision)f", number)
        } else {
            digits = plain(.number(number))
        }
        return grouped(digits) + (unit.map { $0.isEmpty ? "" : " \($0)" } ?? "")
    }

    /// A fraction as a percentage: 0.425 → `43%` (or `42.5%` with precision 1).
    public static func percent(_ fraction: Double, precision: Int) -> String {
        String(format: "%.\(precision)f", fraction * 100) + "%"
    }

    /// What a value that cannot be shown is drawn as (a duration of a billion years, say).
    public static let unavailable = "–"

    /// The longest duration drawn, in seconds (about 31 million years); longer ones, and
    /// anything not a number, are drawn as `unavailable`.
    public static let longestDuration: Double = 1e15

    /// Seconds as `1:05:09` / `4:05`, or `1h 5m` / `4m 5s` / `9s`.
    public static func duration(_ seconds: Double, style: ValueFormat.DurationStyle) -> String {
        guard seconds <= longestDuration else { return unavailable }
        let total = Int(max(0, seconds).rounded(.down))
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        switch style {
        case .positional:
            return hours > 0
                ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))"
                : "\(minutes):\(twoDigits(secs))"
        case .abbreviated:
            if hours > 0 { return minutes > 0 ? "\(hours)h \(minutes)m" : "\(hours)h" }
            if minutes > 0 { return secs > 0 ? "\(minutes)m \(secs)s" : "\(minutes)m" }
            return "\(secs)s"
        }
    }

    /// A date in UTC, until the display formats it in its own time zone.
    public static func date(_ unixSeconds: Double, style: ValueFormat.DateStyle) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: Date(timeIntervalSince1970: unixSeconds))
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let time = "\(twoDigits(parts.hour ?? 0)):\(twoDigits(parts.minute ?? 0))"
        let day = "\(months[(parts.month ?? 1) - 1]) \(parts.day ?? 1), \(parts.year ?? 1970)"
        switch style {
        case .time: return time
        case .date: return day
        case .dateTime: return "\(day) at \(time)"
        }
    }

    /// "in 5 min", "2 hr ago", "now": how far `unixSeconds` is from `now`.
    public static func relative(_ unixSeconds: Double, now: Double) -> String {
        let delta = unixSeconds - now
        guard abs(delta) >= 1 else { return "now" }
        return delta > 0 ? "in \(amount(delta))" : "\(amount(delta)) ago"
    }

    /// "+5 min", "-2 hr": `Text(date, style: .offset)`.
    public static func offset(_ unixSeconds: Double, now: Double) -> String {
        let delta = unixSeconds - now
        return (delta >= 0 ? "+" : "-") + amount(delta)
    }

    /// A span of time in its largest whole unit: "5 min", "1 day".
    private static func amount(_ seconds: Double) -> String {
        let magnitude = abs(seconds)
        guard magnitude <= longestDuration else { return unavailable }
        switch magnitude {
        case ..<60: return "\(Int(magnitude)) sec"
        case ..<3600: return "\(Int(magnitude / 60)) min"
        case ..<86400: return "\(Int(magnitude / 3600)) hr"
        default: return "\(Int(magnitude / 86400)) day\(Int(magnitude / 86400) == 1 ? "" : "s")"
        }
    }

    /// A timer's text: `4:05`, `1:02:03`, as `Text(timerInterval:)` and `.timer` show it.
    public static func timer(_ seconds: Double) -> String {
        duration(seconds, style: .positional)
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

    private static func grouped(_ digits: String) -> String {
        let negative = digits.hasPrefix("-")
        let unsigned = negative ? String(digits.dropFirst()) : digits
        let parts = unsigned.split(separator: ".", maxSplits: 1)
        guard let whole = parts.first, whole.count > 3 else { return digits }
        var groups: [Substring] = []
        var end = whole.endIndex
        while end > whole.startIndex {
            let start = whole.index(end, offsetBy: -3, limitedBy: whole.startIndex) ?? whole.startIndex
            groups.insert(whole[start..<end], at: 0)
            end = start
        }
        return (negative ? "-" : "") + groups.joined(separator: ",") + (parts.count > 1 ? ".\(parts[1])" : "")
    }

    private static func compactJSON(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? ""
    }

    /// A layout value drawn as plain text at `now` (Unix seconds): its format applied, a date
    /// written out; `nil` when it resolves to nothing.
    public static func text(of value: LayoutValue, in scope: LayoutScope, now: Double) -> String? {
        guard let resolved = value.resolve(in: scope) else { return nil }
        guard let format = value.format else { return plain(resolved) }
        switch format {
        case .number(let precision, let unit):
            return resolved.numberValue.map { number($0, precision: precision, unit: unit) } ?? plain(resolved)
        case .percent(let precision):
            return resolved.numberValue.map { percent($0, precision: precision) } ?? plain(resolved)
        case .duration(let style):
            return resolved.numberValue.map { duration($0, style: style) } ?? plain(resolved)
        case .date(let style):
            return scope.unixSeconds(resolved).map { date($0, style: style) } ?? plain(resolved)
        case .relative:
            return scope.unixSeconds(resolved).map { relative($0, now: now) } ?? plain(resolved)
        }
    }
}
