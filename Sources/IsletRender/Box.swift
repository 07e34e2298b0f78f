/// One HTML element being built for a view, as modifiers wrap it.
///
/// SwiftUI modifiers apply in order, each wrapping what came before: `.padding(8).background(.red)`
/// paints the padding red, `.background(.red).padding(8)` does not. A box takes each modifier
/// onto its own element while that keeps the order's meaning, and wraps itself in a new element
/// when it would not (a second background, padding outside a background, any frame).
struct Box {
    var classes: [String]
    var style: [String] = []
    var attributes: [String] = []
    var inner: String
    /// Whether the view takes all the width (height) it is offered, as a Spacer, an HStack with
    /// a Spacer, or a frame with an infinite maximum do in SwiftUI; such a view's parents are
    /// flexible too.
    var flexibleWidth = false
    var flexibleHeight = false
    private var tag: String
    /// Box properties already set on this element.
    private var has: Set<Property> = []

    enum Property: Hashable {
        case padding, background, cornerRadius, opacity, foreground, tint, font, lineLimit, textAlignment, digits
    }

    init(tag: String = "div", classes: [String], inner: String) {
        self.tag = tag
        self.classes = classes
        self.inner = inner
    }

    var html: String {
        let flexibility = (flexibleWidth ? ["la-flex-x"] : []) + (flexibleHeight ? ["la-flex-y"] : [])
        var open = "<\(tag) class=\"\((classes + flexibility).joined(separator: " "))\""
        if !style.isEmpty { open += " style=\"\(style.joined(separator: ";"))\"" }
        for attribute in attributes { open += " \(attribute)" }
        return open + ">" + inner + "</\(tag)>"
    }

    /// Puts this element inside a new one, which takes the modifiers from here on.
    mutating func wrap(classes: [String] = ["la-wrap"]) {
        inner = html
        tag = "div"
        self.classes = classes
        style = []
        attributes = []
        has = []
    }

    /// Sets a property on this element unless an inner modifier already did (the inner one wins,
    /// as in SwiftUI: `.foregroundStyle(.red).foregroundStyle(.blue)` is red).
    mutating func inherit(_ property: Property, class name: String? = nil, _ declarations: String...) {
        guard !has.contains(property) else { return }
        has.insert(property)
        if let name { classes.append(name) }
        style += declarations
    }

    /// Sets a box property, wrapping first if an earlier modifier would be inside it.
    mutating func layer(_ property: Property, wrapsAfter earlier: Set<Property>, class name: String? = nil, _ declarations: String...) {
        if !has.isDisjoint(with: earlier.union([property])) { wrap() }
        has.insert(property)
        if let name { classes.append(name) }
        style += declarations
    }
}
