/// How a bound value is turned into text.
///
/// Written as a name (`"number"`, `"percent"`, `"date"`, `"relative"`, `"duration"`) or an
/// object with options: `{"number": {"precision": 1, "unit": "km/h"}}`,
/// `{"percent": {"precision": 0}}`, `{"date": {"style": "time"}}`,
/// `{"duration": {"style": "abbreviated"}}`.
public enum ValueFormat: Hashable, Sendable {
    /// A number with a fixed count of decimals (or as it is), grouped, and an optional unit.
    case number(precision: Int?, unit: String?)
    /// A fraction (0.42) as a percentage (42%).
    case percent(precision: Int)
    /// A date, shown in the display's time zone.
    case date(DateStyle)
    /// A date relative to now ("in 5 min", "2 min ago"), kept current by the display.
    case relative
    /// A number of seconds as a duration.
    case duration(DurationStyle)

    public enum DateStyle: String, CaseIterable, Sendable {
        case time, date, dateTime
    }

    public enum DurationStyle: String, CaseIterable, Sendable {
        /// `1:05:09`, `4:05`.
        case positional
        /// `1h 5m`, `4m 5s`.
        case abbreviated
    }

    private enum Name: String, CaseIterable {
        case number, percent, date, relative, duration
    }

    static func parse(_ value: JSONValue, at path: String) throws(IsletError) -> ValueFormat {
        let name: Name
        var options: LayoutReader?
        switch value {
        case .string:
            name = try LayoutReader.choice(value, at: path, Name.self)
        case .object(let members) where members.count == 1:
            let (key, body) = members.first!
            name = try LayoutReader.choice(.string(key), at: path, Name.self)
            options = try LayoutReader(body, at: "\(path).\(key)", expecting: "the format's options")
        default:
            throw LayoutReader.error(
                at: path, "expected a format: number, percent, date, relative or duration, or {\"number\": {…options}}"
            )
        }
        let format: ValueFormat
        switch name {
        case .number:
            let precision = try options?.number("precision", in: 0...10).map { Int($0) }
            format = .number(precision: precision, unit: try options?.string("unit"))
        case .percent:
            format = .percent(precision: try options?.number("precision", in: 0...10).map { Int($0) } ?? 0)
        case .date:
            format = .date(try options?.choice("style", DateStyle.self) ?? .time)
        case .relative:
            format = .relative
        case .duration:
            format = .duration(try options?.choice("style", DurationStyle.self) ?? .positional)
        }
        try options?.finish()
        return format
    }
}

extension ValueFormat {
    /// What the format needs a value to be: a value it cannot read is shown as it is, and noted.
    public var need: BindingReader.Need {
        switch self {
        case .number, .percent, .duration: .number
        case .date, .relative: .date
        }
    }
}
