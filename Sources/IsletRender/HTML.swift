/// Escaping for text and attribute values: the only way payload text enters rendered HTML.
enum HTML {
    /// `text` safe inside an element or a double-quoted attribute: `&`, `<`, `>`, `"` and `'`
    /// become entities, so nothing in a payload can open a tag, close an attribute or start a
    /// script.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
