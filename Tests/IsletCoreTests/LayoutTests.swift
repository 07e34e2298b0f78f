import Foundation
import IsletCore
import Testing

/// Reads a layout document from JSON text.
func layout(_ json: String) throws -> Layout {
    try Layout.parse(try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)))
}

/// The message of the refusal a document gets, or nil when it is accepted.
func refusal(_ json: String) -> String? {
    do {
        _ = try layout(json)
        return nil
    } catch let error as IsletError {
        #expect(error.reason == .invalidLayout)
        return error.message
    } catch {
        return "\(error)"
    }
}

@Suite("Layout documents")
struct LayoutTests {
    @Test func everyViewTypeAndModifierIsRead() throws {
        let parsed = try layout(
            """
            {"dateEncoding": "secondsSince1970",
             "lockScreen": {"type": "VStack", "alignment": "leading", "spacing": 4, "children": [
                {"type": "HStack", "alignment": "top", "children": [
                  {"type": "Image", "systemName": "bicycle", "modifiers": [{"font": "title3"}, {"foregroundStyle": "green"}]},
                  {"type": "Text", "text": ["Speed ", {"bind": "state.speed", "format": {"number": {"precision": 1, "unit": "km/h"}}}],
                   "modifiers": [{"font": {"size": 17, "weight": "semibold", "design": "rounded"}}, {"monospacedDigit": true},
                                 {"contentTransition": {"numericText": {"countsDown": true}}}, {"lineLimit": 1},
                                 {"multilineTextAlignment": "center"}]},
                  {"type": "Spacer", "minLength": 4},
                  {"type": "Text", "timerInterval": {"start": {"bind": "state.start"}, "end": {"bind": "state.end"}}, "countsDown": false}
                ]},
                {"type": "ZStack", "alignment": "bottomTrailing", "children": [
                  {"type": "ProgressView", "value": {"bind": "state.done"}, "total": 10, "style": "circular", "modifiers": [{"tint": "orange"}]},
                  {"type": "ProgressView", "timerInterval": {"start": 0, "end": 60}, "countsDown": true}
                ]},
                {"type": "Text", "date": {"bind": "state.eta"}, "style": "relative"},
                {"type": "If", "condition": {"all": [{"bind": "state.status", "equals": "failed"}, {"not": {"bind": "isStale"}}]},
                 "then": {"type": "Text", "text": "Failed"}, "else": {"type": "Text", "text": "OK"}}
              ],
              "modifiers": [{"padding": {"horizontal": 16, "vertical": 12}}, {"frame": {"maxWidth": "infinity", "alignment": "leading"}},
                            {"background": {"light": "#FFFFFF", "dark": "#1C1C1E80"}}, {"cornerRadius": 12}, {"opacity": 0.9},
                            {"activityBackgroundTint": {"light": "#F2F2F7", "dark": "#000"}},
                            {"activitySystemActionForegroundColor": "blue"}]},
             "dynamicIsland": {
               "expanded": {"leading": {"type": "Text", "text": "L"}, "trailing": {"type": "Text", "text": "T"},
                            "center": {"type": "Text", "text": "C"}, "bottom": {"type": "Text", "text": "B"}},
               "compactLeading": {"type": "Image", "systemName": "bicycle"},
               "compactTrailing": {"type": "Text", "text": {"bind": "state.speed", "format": "number", "default": "–"}},
               "minimal": {"type": "Image", "systemName": "bicycle"},
               "keylineTint": "cyan"}}
            """
        )
        #expect(parsed.dateEncoding == .secondsSince1970)
        #expect(parsed.regions.map(\.path) == [
            "lockScreen", "dynamicIsland.expanded.leading", "dynamicIsland.expanded.trailing", "dynamicIsland.expanded.center",
            "dynamicIsland.expanded.bottom", "dynamicIsland.compactLeading", "dynamicIsland.compactTrailing", "dynamicIsland.minimal",
        ])
        #expect(parsed.keylineTint == .system(.cyan))
        let root = try #require(parsed.lockScreen)
        #expect(root.modifiers.count == 7)
        #expect(root.cardStyle.backgroundTint == .adaptive(light: .rgba(0xF2, 0xF2, 0xF7, 255), dark: .rgba(0, 0, 0, 255)))
        #expect(root.modifiers[2] == .background(.adaptive(light: .rgba(255, 255, 255, 255), dark: .rgba(0x1C, 0x1C, 0x1E, 0x80))))
        #expect(root.modifiers[1] == .frame(.init(maxWidth: .infinity, alignment: .leading)))
        #expect(root.modifiers[0] == .padding(.init(top: 12, leading: 16, bottom: 12, trailing: 16)))
    }

    @Test func aRefusalNamesThePathToTheBadNode() {
        let cases: [(String, String)] = [
            (#"{"lockScreen": {"type": "VStak"}}"#, "lockScreen.type: unknown value \"VStak\""),
            (#"{"lockScreen": {"type": "VStack", "children": [{"type": "Text", "text": "a"}, {"type": "Text", "txt": "b"}]}}"#,
             "lockScreen.children[1]: a Text has one of text, timerInterval or date"),
            (#"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"font": {"weight": "heavyish"}}]}}"#,
             "lockScreen.modifiers[0].font.weight: unknown value \"heavyish\""),
            (#"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"fnt": "body"}]}}"#,
             "lockScreen.modifiers[0]: unknown value \"fnt\""),
            (#"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"padding": 8, "font": "body"}]}}"#,
             "lockScreen.modifiers[0]: a modifier is an object with one key"),
            (#"{"lockScreen": {"type": "Text", "text": {"bind": "content.speed"}}}"#,
             "lockScreen.text.bind: \"content.speed\" must start with attributes, state or isStale"),
            (#"{"lockScreen": {"type": "Text", "text": {"bind": "state.speed", "format": "speed"}}}"#,
             "lockScreen.text.format: unknown value \"speed\""),
            (##"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"foregroundStyle": "#12345"}]}}"##,
             "lockScreen.modifiers[0].foregroundStyle: \"#12345\" is not a color"),
            (#"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"foregroundStyle": "grey"}]}}"#,
             "lockScreen.modifiers[0].foregroundStyle: unknown value \"grey\""),
            (#"{"lockScreen": {"type": "Text", "text": "a", "modifiers": [{"opacity": 2}]}}"#,
             "lockScreen.modifiers[0].opacity: 2 is out of range; use 0…1"),
            (#"{"lockScreen": {"type": "VStack", "alignment": "top"}}"#, "lockScreen.alignment: a VStack aligns leading, center, trailing"),
            (#"{"lockScreen": {"type": "If", "condition": {"bind": "state.n", "greaterThan": 1, "lessThan": 5}, "then": {"type": "Spacer"}}}"#,
             "lockScreen.condition: give one comparison, not greaterThan and lessThan"),
            (#"{"lockScreen": {"type": "If", "condition": {"bind": "state.n"}}}"#, "lockScreen.then: missing; expected a view"),
            (#"{"dynamicIsland": {"compact": {"type": "Spacer"}}}"#, "dynamicIsland.compact: unknown field"),
            (#"{"dynamicIsland": {"expanded": {"middle": {"type": "Spacer"}}}}"#, "dynamicIsland.expanded.middle: unknown field"),
            (#"{"lockScreen": {"type": "VStack", "children": [{"type": "Spacer", "modifiers": [{"activityBackgroundTint": "red"}]}]}}"#,
             "lockScreen.children[0].modifiers[0]: this modifier styles the Lock Screen card"),
            (#"{"lockScreen": {"type": "Image"}}"#, "lockScreen.systemName: missing; expected a symbol name"),
            (#"{"lockScreen": {"type": "ProgressView", "value": 1, "timerInterval": {"start": 0, "end": 1}}}"#,
             "lockScreen: a ProgressView has a value or a timerInterval, not both"),
            (#"{"lockScreen": {"type": "Text", "text": {"bind": "state.items[x]"}}}"#, "lockScreen.text.bind: \"state.items[x]\": an index is a number"),
            (#"{"lockScreen": {"type": "Text", "text": [1, [2]]}}"#, "lockScreen.text[1]: expected a literal or {\"bind\": …}, got array"),
            (#"{"lockScreen": 3}"#, "lockScreen: expected a view (an object), got number"),
            (#"{"dateEncoding": "unix"}"#, "dateEncoding: unknown value \"unix\""),
            (#"[]"#, "the layout: expected a layout (an object), got array"),
        ]
        for (document, expected) in cases {
            let message = refusal(document)
            #expect(message?.hasPrefix(expected) == true, "\(document) → \(message ?? "accepted")")
        }
    }

    @Test func aLayoutTooDeepOrTooBigIsRefused() {
        var deep = #"{"type": "Spacer"}"#
        for _ in 0..<30 { deep = #"{"type": "VStack", "children": [\#(deep)]}"# }
        #expect(refusal(#"{"lockScreen": \#(deep)}"#)?.contains("views nest deeper than 24 levels") == true)
        let many = Array(repeating: #"{"type": "Spacer"}"#, count: 450).joined(separator: ",")
        #expect(refusal(#"{"lockScreen": {"type": "HStack", "children": [\#(many)]}}"#)?.contains("at most 400 views") == true)
    }

    @Test func anEmptyDocumentDrawsNothing() throws {
        #expect(try layout("{}").regions.isEmpty)
    }

    @Test func bindingsReadAttributesStateAndStaleness() throws {
        let scope = LayoutScope(
            attributes: ["order": ["id": "A7"]], state: ["riders": .array([["name": "Ana"]]), "speed": 3], isStale: true
        )
        func value(_ path: String) throws -> JSONValue? {
            let parsed = try layout(#"{"lockScreen": {"type": "Text", "text": {"bind": "\#(path)", "default": "none"}}}"#)
            guard case .text(.parts(let parts)) = parsed.lockScreen?.content else { return nil }
            return parts.first?.resolve(in: scope)
        }
        #expect(try value("attributes.order.id") == "A7")
        #expect(try value("state.riders[0].name") == "Ana")
        #expect(try value("state.speed") == 3)
        #expect(try value("isStale") == true)
        #expect(try value("state.riders[3].name") == "none")
        #expect(try value("state.missing") == "none")
    }

    @Test func conditionsCompareAsSwiftWould() throws {
        let scope = LayoutScope(attributes: [:], state: ["status": "failed", "n": 3, "empty": "", "nothing": .null], isStale: false)
        func holds(_ condition: String) throws -> Bool {
            let parsed = try layout(#"{"lockScreen": {"type": "If", "condition": \#(condition), "then": {"type": "Spacer"}}}"#)
            guard case .conditional(let test, _, _) = parsed.lockScreen?.content else { return false }
            return test.holds(in: scope)
        }
        #expect(try holds(#"{"bind": "state.status", "equals": "failed"}"#))
        #expect(try !holds(#"{"bind": "state.status", "notEquals": "failed"}"#))
        #expect(try holds(#"{"bind": "state.n", "equals": 3.0}"#))
        #expect(try holds(#"{"bind": "state.n", "greaterThan": 2}"#))
        #expect(try !holds(#"{"bind": "state.n", "lessThan": 3}"#))
        #expect(try holds(#"{"bind": "state.n", "atMost": 3}"#))
        #expect(try holds(#"{"bind": "state.n", "atLeast": 3}"#))
        #expect(try !holds(#"{"bind": "state.status", "greaterThan": 1}"#))
        #expect(try !holds(#"{"bind": "state.empty"}"#))
        #expect(try holds(#"{"bind": "state.n"}"#))
        #expect(try !holds(#"{"bind": "isStale"}"#))
        #expect(try holds(#"{"bind": "state.nothing", "exists": false}"#))
        #expect(try holds(#"{"bind": "state.missing", "exists": false}"#))
        // null is Swift's nil: a missing value equals it too.
        #expect(try holds(#"{"bind": "state.nothing", "equals": null}"#))
        #expect(try holds(#"{"bind": "state.missing", "equals": null}"#))
        #expect(try !holds(#"{"bind": "state.missing", "notEquals": null}"#))
        #expect(try holds(#"{"bind": "state.n", "notEquals": null}"#))
        #expect(try holds(#"{"any": [{"bind": "isStale"}, {"bind": "state.n", "equals": 3}]}"#))
        #expect(try !holds(#"{"all": [{"bind": "isStale"}, {"bind": "state.n", "equals": 3}]}"#))
        #expect(try holds(#"{"not": {"bind": "isStale"}}"#))
    }

    @Test func datesCountAsTheLayoutSays() {
        #expect(DateEncoding.secondsSince2001.unixSeconds(0) == 978_307_200)
        #expect(DateEncoding.secondsSince1970.unixSeconds(5) == 5)
        #expect(DateEncoding.millisecondsSince1970.unixSeconds(5000) == 5)
    }

    @Test func theDefaultCardShowsTheTypeAttributesAndState() throws {
        let card = Layout.defaultCard(
            attributesType: "PizzaDeliveryAttributes", attributes: ["orderNumber": "8"], state: ["status": "baking", "etaMinutes": 20]
        )
        let texts = card.lockScreen.map(literalTexts) ?? []
        #expect(texts.contains("Pizza Delivery"))
        #expect(texts.contains("Order number "))
        #expect(texts.contains("Eta minutes"))
        #expect(texts.contains("Status"))
        #expect(card.compactLeading != nil && card.compactTrailing != nil && card.minimal != nil)
    }

    @Test func theDefaultCardLeavesOutIsletsReference() throws {
        // A push-to-start from an Islet that delivers carries its activity's id as `islet`.
        let card = Layout.defaultCard(
            attributesType: "DeliveryAttributes", attributes: ["orderNumber": "42", "islet": "0004912A-1A9D-4497-92C0-067CEF4C3110"],
            state: ["status": "confirmed"]
        )
        let texts = card.lockScreen.map(literalTexts) ?? []
        #expect(texts.contains("Order number "))
        #expect(!texts.contains { $0.hasPrefix("Islet") }, "\(texts)")
    }

    @Test func theSmallRegionIsReadAndDrawnOnlyWhenDeclared() throws {
        let small = #"{"type": "Text", "text": {"bind": "state.speed"}}"#
        let declared = try layout(#"{"small": \#(small), "supplementalFamilies": ["small", "medium"]}"#)
        #expect(declared.small != nil && declared.supplementalFamilies == [.small, .medium])
        #expect(declared.drawsSmall)
        #expect(declared.regions.map(\.path) == ["small"])
        // Written but not declared: iOS draws the compact pair on the watch and in the car.
        #expect(try layout(#"{"small": \#(small)}"#).drawsSmall == false)
        #expect(try layout(#"{"small": \#(small), "supplementalFamilies": ["medium"]}"#).drawsSmall == false)
        // Declared with no region: nothing to draw, so the fallback too.
        #expect(try layout(#"{"supplementalFamilies": ["small"]}"#).drawsSmall == false)
    }

    @Test func supplementalFamiliesAreSmallMediumOrBoth() {
        #expect(refusal(#"{"supplementalFamilies": ["large"]}"#)?.hasPrefix("supplementalFamilies[0]: unknown value \"large\"") == true)
        #expect(refusal(#"{"supplementalFamilies": ["small", 3]}"#)?.hasPrefix("supplementalFamilies[1]:") == true)
        #expect(refusal(#"{"supplementalFamilies": "small"}"#)?.hasPrefix("supplementalFamilies: expected an array") == true)
        #expect(refusal(#"{"supplementalFamilies": []}"#) == "supplementalFamilies: name small, medium or both")
        #expect(refusal(#"{"supplementalFamilies": ["small", "small"]}"#) == "supplementalFamilies[1]: small is named twice")
        #expect(refusal(#"{"small": {"type": "Txt"}}"#)?.hasPrefix("small") == true)
    }

    @Test func theDefaultCardHasASmallViewAndDeclaresIt() {
        let card = Layout.defaultCard(attributesType: "TimerAttributes", attributes: [:], state: ["minutes": 4])
        #expect(card.drawsSmall)
        #expect((card.small.map(literalTexts) ?? []).contains("Timer"))
    }

    private func literalTexts(_ view: LayoutView) -> [String] {
        var texts: [String] = []
        if case .text(.parts(let parts)) = view.content {
            for part in parts { if case .literal(.string(let text)) = part.source { texts.append(text) } }
        }
        return texts + view.children.flatMap { literalTexts($0.view) }
    }
}
