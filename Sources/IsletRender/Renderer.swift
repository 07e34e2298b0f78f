import Foundation
import IsletCore

/// Draws an activity's presentations: layout + attributes + content state → HTML per region.
///
/// The output is a fragment per presentation, styled by `Renderer.stylesheet` and brought to
/// life by `Renderer.script` (timers, relative dates and timed progress advance by themselves
/// there, with no update). Every value from a payload is escaped; the markup comes only from
/// the layout's structure, Islet's icons and numbers the renderer formats itself, so nothing in
/// a payload can inject markup or script. Each element carries `data-n`, its view's path, so a
/// display can match old and new elements and animate the change.
public struct Renderer: Sendable {
    public let icons: IconSet
    private let unknownIcon: @Sendable (String) -> Void

    /// - Parameters:
    ///   - icons: Where `Image(systemName:)` draws from.
    ///   - unknownIcon: Told each name the icon set does not have (a placeholder is drawn).
    public init(icons: IconSet = .builtIn, unknownIcon: @escaping @Sendable (String) -> Void = { _ in }) {
        self.icons = icons
        self.unknownIcon = unknownIcon
    }

    /// Every presentation of one activity, with the warnings of the bindings that found nothing
    /// their views could draw (noted as it draws, by one `BindingReader`).
    /// - Parameter now: The time for the text timers and relative dates show before the display's
    ///   script takes over.
    public func render(_ layout: Layout, scope: LayoutScope, now: Date) -> Presentation {
        var context = Context(reader: BindingReader(scope: scope), now: now.timeIntervalSince1970)
        func region(_ region: Layout.Region) -> String {
            context.reader.region = region
            let place = Place(id: Self.elementIDs[region]!, path: region.path)
            return layout[region].map { render($0, at: place, parent: .vertical, context: &context).html } ?? ""
        }
        let card = layout.lockScreen?.cardStyle
        return Presentation(
            lockScreen: region(.lockScreen),
            expandedLeading: region(.expandedLeading),
            expandedTrailing: region(.expandedTrailing),
            expandedCenter: region(.expandedCenter),
            expandedBottom: region(.expandedBottom),
            compactLeading: region(.compactLeading),
            compactTrailing: region(.compactTrailing),
            minimal: region(.minimal),
            small: region(.small),
            drawsSmall: layout.drawsSmall,
            backgroundTint: card?.backgroundTint.map(CSSColor.init(resolving:)),
            systemActionForegroundColor: card?.systemActionForegroundColor.map(CSSColor.init(resolving:)),
            keylineTint: layout.keylineTint.map(CSSColor.init(resolving:)),
            isStale: scope.isStale,
            warnings: context.reader.warnings + (layout.small != nil && !layout.drawsSmall ? [.smallNotDeclared] : [])
        )
    }

    /// The first step of each region's element paths (`data-n`): short, as every element has one.
    private static let elementIDs: [Layout.Region: String] = [
        .lockScreen: "l", .expandedLeading: "el", .expandedTrailing: "et", .expandedCenter: "ec", .expandedBottom: "eb",
        .compactLeading: "cl", .compactTrailing: "ct", .minimal: "m", .small: "s",
    ]

    private struct Context {
        /// Reads every value and condition, and notes what they find missing.
        var reader: BindingReader
        let now: Double
        var scope: LayoutScope { reader.scope }
    }

    /// Where a view is: its element's path (`data-n`), and its path in the layout document, which
    /// warnings name.
    private struct Place {
        var id: String
        var path: String

        func child(_ index: Int) -> Place { Place(id: "\(id).\(index)", path: "\(path).children[\(index)]") }
        var then: Place { Place(id: "\(id)t", path: "\(path).then") }
        var otherwise: Place { Place(id: "\(id)e", path: "\(path).else") }
        func field(_ name: String) -> String { "\(path).\(name)" }
    }

    private func render(_ view: LayoutView, at place: Place, parent: LayoutView.Stack.Axis, context: inout Context) -> Box {
        var box = content(view.content, at: place, parent: parent, context: &context)
        // An `If` is its branch, which carries its own path; a false one with no `else` is nothing.
        if case .conditional = view.content {} else {
            box.attributes.insert("data-n=\"\(place.id)\"", at: 0)
        }
        for modifier in view.modifiers {
            apply(modifier, to: &box, parent: parent)
        }
        return box
    }

    private func content(_ content: LayoutView.Content, at place: Place, parent: LayoutView.Stack.Axis, context: inout Context) -> Box {
        switch content {
        case .stack(let stack):
            let boxes = stack.children.enumerated().map { index, child in
                render(child, at: place.child(index), parent: stack.axis, context: &context)
            }
            var box = Box(classes: ["la-\(stack.axis.rawValue.lowercased())", "la-a-\(stack.alignment.rawValue)"], inner: boxes.map(\.html).joined())
            if let spacing = stack.spacing { box.style.append("--gap:\(css(spacing))px") }
            box.flexibleWidth = boxes.contains(where: \.flexibleWidth)
            box.flexibleHeight = boxes.contains(where: \.flexibleHeight)
            return box
        case .text(let text):
            return self.text(text, at: place, context: &context)
        case .image(let name):
            let symbol = context.reader.read(name, as: .anything, at: place.field("systemName")).map(ValueText.plain) ?? ""
            let svg = icons.svg(named: symbol)
            if svg == nil { unknownIcon(symbol) }
            var box = Box(tag: "span", classes: svg == nil ? ["la-image", "la-placeholder"] : ["la-image"], inner: svg ?? icons.placeholder)
            box.attributes += ["role=\"img\"", "aria-label=\"\(HTML.escape(symbol))\""]
            return box
        case .spacer(let minLength):
            var box = Box(classes: ["la-spacer"], inner: "")
            if let minLength { box.style.append("--min:\(css(minLength))px") }
            box.flexibleWidth = parent != .vertical
            box.flexibleHeight = parent == .vertical
            return box
        case .progress(let progress):
            return self.progress(progress, at: place, context: &context)
        case .conditional(let condition, let then, let otherwise):
            // The branch is the view: SwiftUI's `if` puts one or the other in the tree. Each branch
            // has its own path, so a display fades one out and the other in when they swap.
            if context.reader.holds(condition, at: place.field("condition")) {
                return render(then, at: place.then, parent: parent, context: &context)
            }
            if let otherwise {
                return render(otherwise, at: place.otherwise, parent: parent, context: &context)
            }
            return Box(classes: ["la-empty"], inner: "")
        }
    }

    private func text(_ text: LayoutView.Text, at place: Place, context: inout Context) -> Box {
        switch text {
        case .parts(let parts):
            // One part is written `"text": VALUE`, several `"text": [VALUE, …]`.
            let inner = parts.enumerated().map { index, part in
                value(part, at: parts.count == 1 ? place.field("text") : place.field("text[\(index)]"), context: &context)
            }
            return Box(tag: "span", classes: ["la-text"], inner: inner.joined())
        case .timer(let start, let end, let countsDown):
            // No start: from when it is drawn (SwiftUI's `Date.now...end`).
            let start: Double? = if let start { context.reader.date(start, at: place.field("timerInterval.start")) } else { context.now }
            let end = context.reader.date(end, at: place.field("timerInterval.end"))
            guard let start, let end else { return emptyText() }
            let elapsed = min(max(context.now - start, 0), max(end - start, 0))
            let remaining = min(max(end - context.now, 0), max(end - start, 0))
            var box = Box(tag: "span", classes: ["la-text", "la-timer"], inner: ValueText.timer(countsDown ? remaining : elapsed))
            box.attributes += [millis("data-start", start), millis("data-end", end), "data-counts-down=\"\(countsDown)\""]
            return box
        case .date(let value, let style):
            guard let date = context.reader.date(value, at: place.field("date")) else { return emptyText() }
            switch style {
            case .timer:
                var box = Box(tag: "span", classes: ["la-text", "la-timer"], inner: ValueText.timer(abs(date - context.now)))
                box.attributes.append(millis("data-date", date))
                return box
            case .relative, .offset, .time, .date:
                return Box(tag: "span", classes: ["la-text"], inner: dateElement(date, style: style.rawValue, now: context.now))
            }
        }
    }

    private func emptyText() -> Box { Box(tag: "span", classes: ["la-text"], inner: "") }

    /// One value as text, formatted; dates as `<time>` elements the display keeps current. A value
    /// its format cannot read is shown as it is (and noted by the reader).
    private func value(_ value: LayoutValue, at path: String, context: inout Context) -> String {
        guard let resolved = context.reader.read(value, as: value.format?.need ?? .anything, at: path) else { return "" }
        guard let format = value.format else { return HTML.escape(ValueText.plain(resolved)) }
        switch format {
        case .number(let precision, let unit):
            guard let number = resolved.numberValue else { return HTML.escape(ValueText.plain(resolved)) }
            return HTML.escape(ValueText.number(number, precision: precision, unit: unit))
        case .percent(let precision):
            guard let number = resolved.numberValue else { return HTML.escape(ValueText.plain(resolved)) }
            return ValueText.percent(number, precision: precision)
        case .duration(let style):
            guard let number = resolved.numberValue else { return HTML.escape(ValueText.plain(resolved)) }
            return ValueText.duration(number, style: style)
        case .date(let style):
            guard let date = context.scope.unixSeconds(resolved) else { return HTML.escape(ValueText.plain(resolved)) }
            return dateElement(date, style: style.rawValue, now: context.now)
        case .relative:
            guard let date = context.scope.unixSeconds(resolved) else { return HTML.escape(ValueText.plain(resolved)) }
            return dateElement(date, style: "relative", now: context.now)
        }
    }

    private func dateElement(_ date: Double, style: String, now: Double) -> String {
        let text: String =
            switch style {
            case "relative": ValueText.relative(date, now: now)
            case "offset": ValueText.offset(date, now: now)
            case "date": ValueText.date(date, style: .date)
            case "dateTime": ValueText.date(date, style: .dateTime)
            default: ValueText.date(date, style: .time)
            }
        return "<time class=\"la-date\" \(millis("data-date", date)) data-style=\"\(style)\">\(text)</time>"
    }

    private func progress(_ progress: LayoutView.Progress, at place: Place, context: inout Context) -> Box {
        let fraction: Double
        var attributes: [String] = []
        switch progress.kind {
        case .value(let value, let total):
            let amount = context.reader.number(value, at: place.field("value")) ?? 0
            let whole = context.reader.number(total, at: place.field("total")) ?? 1
            fraction = whole > 0 ? amount / whole : 0
        case .timer(let start, let end, let countsDown):
            let start = start.flatMap { context.reader.date($0, at: place.field("timerInterval.start")) } ?? context.now
            let end = context.reader.date(end, at: place.field("timerInterval.end")) ?? context.now
            let elapsed = end > start ? (context.now - start) / (end - start) : 1
            fraction = countsDown ? 1 - elapsed : elapsed
            attributes = [millis("data-start", start), millis("data-end", end), "data-counts-down=\"\(countsDown)\""]
        }
        let clamped = fraction.isNaN ? 0 : min(max(fraction, 0), 1)
        let inner = progress.style == .linear ? "<div class=\"la-progress-fill\"></div>" : ""
        var box = Box(classes: ["la-progress", "la-progress-\(progress.style.rawValue)"], inner: inner)
        // A linear ProgressView takes all the width it is offered, as SwiftUI's does: in an
        // HStack it shares the room left by the others, and makes its stacks flexible too.
        box.flexibleWidth = progress.style == .linear
        box.style.append("--p:\(css(clamped))")
        box.attributes += attributes
        return box
    }

    private func apply(_ modifier: LayoutModifier, to box: inout Box, parent: LayoutView.Stack.Axis) {
        switch modifier {
        case .font(let font):
            // A font is one value: the innermost `.font` wins whole, as in SwiftUI.
            let size = font.size ?? font.style?.size ?? LayoutModifier.Font.TextStyle.body.size
            let weight = font.weight ?? font.style?.weight ?? .regular
            let design = font.design ?? .default
            box.inherit(.font, class: design == .default ? nil : "la-design-\(design.rawValue)", "font-size:\(css(size))px", "font-weight:\(weight.value)")
        case .monospacedDigit:
            box.inherit(.digits, class: "la-tabular")
        case .foregroundStyle(let color):
            box.inherit(.foreground, class: "la-fg", CSSColor(color).declarations("fg"))
        case .tint(let color):
            box.inherit(.tint, class: "la-tint", CSSColor(color).declarations("tint"))
        case .lineLimit(let lines):
            box.inherit(.lineLimit, class: "la-clamp", "--lines:\(lines)")
        case .multilineTextAlignment(let alignment):
            box.inherit(.textAlignment, "text-align:\(alignment == .leading ? "start" : alignment == .trailing ? "end" : "center")")
        case .contentTransition(let transition):
            switch transition {
            case .numericText(let countsDown):
                box.attributes.append("data-transition=\"numeric\(countsDown ? "-down" : "")\"")
            case .opacity: box.attributes.append("data-transition=\"opacity\"")
            case .identity: box.attributes.append("data-transition=\"identity\"")
            }
        case .padding(let edges):
            box.layer(
                .padding, wrapsAfter: [.background, .cornerRadius],
                "padding:\(css(edges.top))px \(css(edges.trailing))px \(css(edges.bottom))px \(css(edges.leading))px"
            )
        case .background(let color):
            box.layer(.background, wrapsAfter: [.cornerRadius], class: "la-bg", CSSColor(color).declarations("bg"))
        case .cornerRadius(let radius):
            box.layer(.cornerRadius, wrapsAfter: [], "border-radius:\(css(radius))px", "overflow:hidden")
        case .opacity(let opacity):
            box.layer(.opacity, wrapsAfter: [], "opacity:\(css(opacity))")
        case .frame(let frame):
            frameBox(frame, &box)
        case .activityBackgroundTint, .activitySystemActionForegroundColor:
            break  // The card's style, returned with the presentation.
        }
    }

    /// `.frame(…)` wraps the view in a box of that size that places it by `alignment`.
    private func frameBox(_ frame: LayoutModifier.Frame, _ box: inout Box) {
        box.wrap(classes: ["la-frame", "la-a-\((frame.alignment ?? .center).rawValue)"])
        let lengths: [(String, Double?)] = [
            ("width", frame.width), ("height", frame.height), ("min-width", frame.minWidth), ("min-height", frame.minHeight),
            ("max-width", frame.maxWidth), ("max-height", frame.maxHeight),
        ]
        for (property, length) in lengths {
            guard let length else { continue }
            box.style.append(length.isInfinite ? "\(property):none" : "\(property):\(css(length))px")
        }
        // As wide (or tall) as there is room.
        if frame.maxWidth == .infinity { box.flexibleWidth = true }
        if frame.maxHeight == .infinity { box.flexibleHeight = true }
    }

    /// A date as milliseconds for the display's script. Dates reach here through
    /// `LayoutScope.unixSeconds`, inside `WireFormat.dateRange`, so the product fits an `Int64`.
    private func millis(_ name: String, _ seconds: Double) -> String {
        "\(name)=\"\(Int64((seconds * 1000).rounded()))\""
    }

    /// A number for CSS: no exponent, at most three decimals.
    private func css(_ number: Double) -> String {
        let rounded = (number * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }
}
