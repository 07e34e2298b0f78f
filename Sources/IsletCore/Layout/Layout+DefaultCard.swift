/// The layout of an activity type that has none: a clean card with the type's name, its
/// attributes and its content state, so a `curl` user sees something good at once.
extension Layout {
    /// A card for one activity, built from the names of its attributes and state.
    public static func defaultCard(attributesType: String, attributes: JSONValue, state: JSONValue) -> Layout {
        let title = LayoutView(.text(.parts([.literal(.string(displayName(attributesType)))])), modifiers: [
            .font(.init(style: .headline)), .lineLimit(1),
        ])
        // `islet` is the reference Islet puts into a push-to-start's attributes (docs/delivery.md):
        // the app's plumbing, not something to show.
        let attributeNames = (attributes.objectValue?.keys.sorted() ?? []).filter { $0 != "islet" }.prefix(3)
        let subtitleParts = attributeNames.enumerated().flatMap { index, name -> [LayoutValue] in
            (index > 0 ? [LayoutValue.literal(" · ")] : []) + [.literal(.string("\(words(name).capitalizedFirst) ")), bound(.attributes, name)]
        }
        let subtitle = LayoutView(.text(.parts(subtitleParts)), modifiers: [
            .font(.init(style: .subheadline)), .foregroundStyle(.system(.secondary)), .lineLimit(1),
        ])
        let stateNames = Array((state.objectValue?.keys.sorted() ?? []).prefix(4))
        let rows = stateNames.map { name in
            LayoutView(
                .stack(.init(axis: .horizontal, alignment: .center, spacing: 8, children: [
                    LayoutView(.text(.parts([.literal(.string(words(name).capitalizedFirst))])), modifiers: [.foregroundStyle(.system(.secondary))]),
                    LayoutView(.spacer(minLength: nil)),
                    value(name),
                ])),
                modifiers: [.frame(.init(maxWidth: .infinity))]
            )
        }
        let header = LayoutView(.stack(.init(axis: .horizontal, alignment: .center, spacing: 10, children: [
            LayoutView(.image(systemName: .literal("bolt.fill")), modifiers: [.font(.init(size: 20)), .foregroundStyle(.system(.accentColor))]),
            LayoutView(.stack(.init(axis: .vertical, alignment: .leading, spacing: 2,
                children: [title] + (subtitleParts.isEmpty ? [] : [subtitle])))),
            LayoutView(.spacer(minLength: nil)),
        ])))
        let lockScreen = LayoutView(
            .stack(.init(axis: .vertical, alignment: .leading, spacing: 8, children: [header] + rows)),
            modifiers: [.padding(.init(top: 14, leading: 16, bottom: 14, trailing: 16))]
        )
        let firstValue = stateNames.first.map(value)
        let icon = LayoutView(.image(systemName: .literal("bolt.fill")), modifiers: [.foregroundStyle(.system(.accentColor))])
        // The watch's and the car's card: the icon, the name and the first value, in little room.
        let small = LayoutView(
            .stack(.init(axis: .horizontal, alignment: .center, spacing: 8, children: [
                LayoutView(.image(systemName: .literal("bolt.fill")), modifiers: [.font(.init(size: 22)), .foregroundStyle(.system(.accentColor))]),
                LayoutView(.stack(.init(axis: .vertical, alignment: .leading, spacing: 2, children: [
                    LayoutView(.text(.parts([.literal(.string(displayName(attributesType)))])), modifiers: [
                        .font(.init(style: .footnote, weight: .semibold)), .lineLimit(1),
                    ])
                ] + (firstValue.map { [$0] } ?? [])))),
                LayoutView(.spacer(minLength: nil)),
            ])),
            modifiers: [.padding(.init(top: 8, leading: 12, bottom: 8, trailing: 12))]
        )
        return Layout(
            lockScreen: lockScreen,
            expandedLeading: LayoutView(.stack(.init(axis: .horizontal, spacing: 6, children: [
                icon, LayoutView(.text(.parts([.literal(.string(displayName(attributesType)))])), modifiers: [.font(.init(style: .headline)), .lineLimit(1)]),
            ]))),
            expandedTrailing: firstValue,
            expandedBottom: rows.isEmpty ? nil : LayoutView(.stack(.init(axis: .vertical, alignment: .leading, spacing: 4, children: Array(rows.dropFirst().prefix(2))))),
            compactLeading: icon,
            compactTrailing: firstValue,
            minimal: icon,
            small: small,
            supplementalFamilies: [.small]
        )
    }

    /// A state field's value, as the card shows it: semibold, digits rolling.
    /// The Android notification of a type whose layout has no `android` region: the type's name
    /// as the title, and the first two members of the content state, named, as the text — as
    /// the default card shows them.
    public static func defaultAndroid(attributesType: String, state: JSONValue) -> AndroidLayout {
        let names = Array((state.objectValue?.keys.sorted() ?? []).prefix(2))
        let parts = names.enumerated().flatMap { index, name -> [LayoutValue] in
            (index > 0 ? [LayoutValue.literal(" · ")] : []) + [.literal(.string("\(words(name).capitalizedFirst) ")), bound(.state, name)]
        }
        return AndroidLayout(title: [.literal(.string(displayName(attributesType)))], text: parts.isEmpty ? nil : parts)
    }

    private static func value(_ name: String) -> LayoutView {
        LayoutView(.text(.parts([bound(.state, name)])), modifiers: [
            .font(.init(weight: .semibold)), .monospacedDigit, .contentTransition(.numericText(countsDown: false)), .lineLimit(1),
        ])
    }

    private static func bound(_ root: BindingPath.Root, _ name: String) -> LayoutValue {
        LayoutValue(source: .binding(BindingPath(root: root, steps: [.member(name)])), format: nil, fallback: "–")
    }

    /// `PizzaDeliveryAttributes` → `Pizza Delivery`.
    static func displayName(_ attributesType: String) -> String {
        var name = Substring(attributesType)
        for suffix in ["ActivityAttributes", "Attributes", "Attribute"] where name.hasSuffix(suffix) && name.count > suffix.count {
            name = name.dropLast(suffix.count)
            break
        }
        return words(String(name)).split(separator: " ").map { String($0).capitalizedFirst }.joined(separator: " ")
    }

    /// `estimatedCompletionTime` → `estimated completion time`, `buildId` → `build id`.
    static func words(_ name: String) -> String {
        var words = ""
        var previous: Character?
        for character in name {
            if character == "_" || character == "-" {
                words.append(" ")
            } else if character.isUppercase, let previous, previous.isLowercase || previous.isNumber {
                words += " " + character.lowercased()
            } else {
                words.append(previous == nil || words.last == " " ? character : Character(character.lowercased()))
            }
            previous = character
        }
        return words
    }
}

extension String {
    fileprivate var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
