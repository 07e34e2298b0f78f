import Foundation
import IsletCore
import IsletRender

extension FuzzTarget {
    /// The renderer with any payload: a JSON object with `layout` (any document; without one,
    /// the default card a type without a layout gets, titled by `attributesType`),
    /// `attributes`, `state`, `isStale` and `now` (Unix seconds). A layout `Layout.parse`
    /// accepts is drawn with whatever attributes and state arrive, as the display draws them,
    /// and must never trap; the HTML holds only the renderer's own markup and the icons', with
    /// no event handler, whatever the strings in the layout or the payload say.
    public static let renderer = FuzzTarget(name: "renderer") { data throws(FuzzFailure) in
        guard let input = try? WireFormat.decoder().decode(JSONValue.self, from: data), let fields = input.objectValue else {
            return
        }
        let attributes = fields["attributes"] ?? [:]
        let state = fields["state"] ?? [:]
        let layout: Layout
        if let document = fields["layout"] {
            guard let parsed = try parsedLayout(document) else { return }
            layout = parsed
        } else {
            let type = fields["attributesType"]?.stringValue ?? "FuzzAttributes"
            layout = .defaultCard(attributesType: type, attributes: attributes, state: state)
        }
        let scope = LayoutScope(
            attributes: attributes, state: state, isStale: fields["isStale"] == .bool(true), dateEncoding: layout.dateEncoding
        )
        // The server's clock, not the payload's: any plausible time.
        let now = fields["now"]?.numberValue.flatMap { abs($0) < 1e10 ? $0 : nil } ?? 1_750_000_000
        let presentation = Renderer().render(layout, scope: scope, now: Date(timeIntervalSince1970: now))
        for kind in PresentationDocument.Kind.allCases {
            try MarkupCheck.check(PresentationDocument.frame(presentation, kind))
        }
    }
}

/// Checks that rendered HTML holds only markup Islet writes: the renderer's elements and the
/// icons', quoted attribute values, no `on…` handler and no `>` or `<` outside a tag. Payload
/// text that escaped `HTML.escape` would show up as another tag or a stray bracket.
enum MarkupCheck {
    /// The elements the renderer and the display's frames write.
    static let ownTags: Set<String> = ["div", "span", "time", "section"]

    /// The elements Islet's icons use.
    static let iconTags: Set<String> = {
        var tags: Set<String> = []
        let icons = IconSet.builtIn
        for svg in icons.names.compactMap(icons.svg(named:)) + [icons.placeholder] {
            _ = try? scan(svg) { tags.insert($0) }
        }
        return tags
    }()

    static func check(_ html: String) throws(FuzzFailure) {
        let allowed = ownTags.union(iconTags)
        try scan(html) { tag throws(FuzzFailure) in
            try expect(allowed.contains(tag), "the HTML has a <\(tag)> element, which Islet does not write: \(html)")
        }
    }

    /// Walks `html` tag by tag, calling `element` with each tag's name, and fails on anything
    /// that is not well-formed markup of the kind Islet writes.
    private static func scan(_ html: String, element: (String) throws(FuzzFailure) -> Void) throws(FuzzFailure) {
        let bytes = Array(html.utf8)
        var index = 0
        func isNameByte(_ byte: UInt8) -> Bool {
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                || byte == 0x3A
        }
        func name() -> String {
            let start = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: ">"):
                throw FuzzFailure("a '>' outside a tag at byte \(index): \(html)")
            case UInt8(ascii: "<"):
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "/") { index += 1 }
                let tag = name().lowercased()
                try expect(!tag.isEmpty, "a '<' that opens no tag at byte \(index): \(html)")
                try element(tag)
                while true {
                    while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A { index += 1 }
                    guard index < bytes.count else { throw FuzzFailure("an unclosed <\(tag)>: \(html)") }
                    if bytes[index] == UInt8(ascii: ">") { break }
                    if bytes[index] == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") {
                        index += 1
                        break
                    }
                    let attribute = name().lowercased()
                    try expect(!attribute.isEmpty, "a stray byte in <\(tag)> at byte \(index): \(html)")
                    try expect(!attribute.hasPrefix("on"), "an event handler \(attribute) on <\(tag)>: \(html)")
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
                    index += 1
                    try expect(index < bytes.count && bytes[index] == UInt8(ascii: "\""), "an unquoted \(attribute) on <\(tag)>: \(html)")
                    index += 1
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                        try expect(bytes[index] != UInt8(ascii: "<"), "a '<' inside \(attribute) on <\(tag)>: \(html)")
                        index += 1
                    }
                    index += 1
                }
                index += 1
            default:
                index += 1
            }
        }
    }
}
