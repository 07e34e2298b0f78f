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

    /// Every presentation of one activity.
    /// - Parameter now: The time for the text timers and relative dates show before the display's
    ///   script takes over.
    public func render(_ layout: Layout, scope: LayoutScope, now: Date) -> Presentation {
        let context = Context(scope: scope, now: now.timeIntervalSince1970)
        func region(_ view: LayoutView?, _ id: String) -> String {
            view.map { render($0, id: id, parent: .vertical, context: context).html } ?? ""
        }
        let card = layout.lockScreen?.cardStyle
        return Presentation(
            lockScreen: region(layout.lockScreen, "l"),
            expandedLeading: region(layout.expandedLeading, "el"),
            expandedTrailing: region(layout.expandedTrailing, "et"),
            expandedCenter: region(layout.expandedCenter, "ec"),
            expandedBottom: region(layout.expandedBottom, "eb"),
            compactLeading: region(layout.compactLeading, "cl"),
            compactTrailing: region(layout.compactTrailing, "ct"),
            minimal: region(layout.minimal, "m"),
            backgroundTint: card?.backgroundTint.map(CSSColor.init(resolving:)),
            systemActionForegroundColor: card?.systemActionForegroundColor.map(CSSColor.init(resolving:)),
            keylineTint: layout.keylineTint.map(CSSColor.init(resolving:)),
            isStale: scope.isStale
        )
    }

    private struct Context {
        let scope: LayoutScope
        let now: Double
    }

    private func render(_ view: LayoutView, id: String, parent: LayoutView.Stack.Axis, context: Context) -> Box {
        var box = content(view.content, id: id, parent: parent, context: context)
        // An `If` is its branch, which carries its own path; a false one with no `else` is nothing.
        if case .conditional = view.content {} else {
            box.attributes.insert("data-n=\"\(id)\"", at: 0)
        }
        for modifier in view.modifiers {
            apply(modifier, to: &box, parent: parent)
        }
        return box
    }

    private func content(_ content: LayoutView.Content, id: String, parent: LayoutView.Stack.Axis, context: Context) -> Box {
        switch content {
        case .stack(let stack):
            let boxes = stack.children.enumerated().map { index, child in
                render(child, id: "\(id).\(index)", parent: stack.axis, context: context)
            }
            var box = Box(classes: ["la-\(stack.axis.rawValue.lowercased())", "la-a-\(stack.alignment.rawValue)"], inner: boxes.map(\.html).joined())
            if let spacing = stack.spacing { box.style.append("--gap:\(css(spacing))px") }
            box.flexibleWidth = boxes.contains(where: \.flexibleWidth)
            box.flexibleHeight = boxes.contains(where: \.flexibleHeight)
            return box
        case .text(let text):
            return self.text(text, context: context)
        case .image(let name):
            let symbol = name.resolve(in: context.scope).map(ValueText.plain) ?? ""
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
            return self.progress(progress, context: context)
        case .conditional(let condition, let then, let otherwise):
            // The branch is the view: SwiftUI's `if` puts one or the other in the tree. Each branch
            // has its own path, so a display fades one out and the other in when they swap.
            if condition.holds(in: context.scope) {
                return render(then, id: "\(id)t", parent: parent, context: context)
            }
            if let otherwise {
                return render(otherwise, id: "\(id)e", parent: parent, context: context)
            }
            return Box(classes: ["la-empty"], inner: "")
        }
    }

    private func text(_ text: LayoutView.Text, context: Context) -> Box {
        switch text {
        case .parts(let parts):
            let inner = parts.map { self.value($0, context: context) }.joined()
            return Box(tag: "span", classes: ["la-text"], inner: inner)
        case .timer(let start, let end, let countsDown):
            guard let start = date(start, context), let end = date(end, context) else { return emptyText() }
            let elapsed = min(max(context.now - start, 0), max(end - start, 0))
            let remaining = min(max(end - context.now, 0), max(end - start, 0))
            var box = Box(tag: "span", classes: ["la-text", "la-timer"], inner: ValueText.timer(countsDown ? remaining : elapsed))
            box.attributes += [millis("data-start", start), millis("data-end", end), "data-counts-down=\"\(countsDown)\""]
            return box
        case .date(let value, let style):
            guard let date = date(value, context) else { return emptyText() }
            switch style {
            case .timer:
                var box = Box(tag: "span", classes: ["la-text", "la-timer"], inner: ValueText.timer(abs(date - context.now)))
                box.attributes.append(millis("data-date", date))
                return box
            case .relative, .offset, .time, .date:
                return Box(tag: "span", classes: ["la-text"], inner: dateElement(date, style: style.rawValue, context: context))
            }
        }
    }

    private func emptyText() -> Box { Box(tag: "span", classes: ["la-text"], inner: "") }

    /// One value as text, formatted; dates as `<time>` elements the display keeps current.
    private func value(_ value: LayoutValue, context: Context) -> String {
        guard let resolved = value.resolve(in: context.scope) else { return "" }
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
            return dateElement(date, style: style.rawValue, context: context)
        case .relative:
            guard let date = context.scope.unixSeconds(resolved) else { return HTML.escape(ValueText.plain(resolved)) }
            return dateElement(date, style: "relative", context: context)
        }
    }

    private func dateElement(_ date: Double, style: String, context: Context) -> String {
        let text: String =
            switch style {
            case "relative": ValueText.relative(date, now: context.now)
            case "offset": ValueText.offset(date, now: context.now)
            case "date": ValueText.date(date, style: .date)
            case "dateTime": ValueText.date(date, style: .dateTime)
            default: ValueText.date(date, style: .time)
            }
        return "<time class=\"la-date\" \(millis("data-date", date)) data-style=\"\(style)\">\(text)</time>"
    }

    private func progress(_ progress: LayoutView.Progress, context: Context) -> Box {
        let fraction: Double
        var attributes: [String] = []
        switch progress.kind {
        case .value(let value, let total):
            let amount = value.resolve(in: context.scope)?.numberValue ?? 0
            let whole = total.resolve(in: context.scope)?.numberValue ?? 1
            fraction = whole > 0 ? amount / whole : 0
        case .timer(let start, let end, let countsDown):
            let start = date(start, context) ?? context.now
            let end = date(end, context) ?? context.now
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

    private func date(_ value: LayoutValue, _ context: Context) -> Double? {
        value.resolve(in: context.scope).flatMap(context.scope.unixSeconds)
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
