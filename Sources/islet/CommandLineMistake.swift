import ArgumentParser
import Foundation

/// A mistyped command line, said as a person would want to hear it: a command that does not
/// exist (`islet lst`, `islet apps craete`), or an option the command does not have
/// (`islet end --all --dismis immediate`), with the nearest real name.
///
/// ArgumentParser alone says neither well: it runs a command's `validate()` before it looks for
/// options it does not know, so a mistyped option hides behind the command's own complaint
/// ("Give an activity's id or --all"); and a group with a default subcommand (`islet apps` is
/// `islet apps list`) hands an unknown word to that subcommand, whose usage it then prints.
/// This walks the arguments as ArgumentParser would, over the same command tree, only once
/// ArgumentParser has refused them.
struct CommandLineMistake: Error {
    /// What is wrong, with a suggestion when a real name is close.
    var message: String
    /// The command whose usage helps.
    var command: any ParsableCommand.Type

    /// The first mistake in `arguments` (what follows the program's name), or `nil` when every
    /// command and option exists and ArgumentParser's own message says more.
    static func find(in arguments: [String], root: any ParsableCommand.Type) -> CommandLineMistake? {
        var command = root
        var options = KnownOptions(of: command)
        var positionals = 0
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let word = arguments[index]
            index += 1
            if word == "--" { return nil }
            if word.hasPrefix("-"), word.count > 1, Double(word) == nil {
                guard let option = options.option(word) else {
                    let name = String(word.prefix { $0 != "=" })
                    return CommandLineMistake(
                        message: "Unknown option '\(name)'.\(Self.suggestion(for: name, among: options.longNames))", command: command
                    )
                }
                if option.takesValue, !word.contains("=") { index += 1 }
                continue
            }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, positionals == 0 else {
                positionals += 1
                continue
            }
            if let named = subcommands.first(where: { $0._commandName == word || $0.configuration.aliases.contains(word) }) {
                command = named
                options = KnownOptions(of: command)
                continue
            }
            // ArgumentParser's own `islet help <command>`.
            if word == "help", ObjectIdentifier(command) == ObjectIdentifier(root) { return nil }
            // A word for the default subcommand, if it takes words; none of Islet's do.
            if let fallback = command.configuration.defaultSubcommand, KnownOptions(of: fallback).takesPositionals {
                command = fallback
                options = KnownOptions(of: command)
                positionals = 1
                continue
            }
            let names = subcommands.flatMap { [$0._commandName] + $0.configuration.aliases }
            let path = CommandLineMistake.path(to: command, from: root)
            return CommandLineMistake(
                message: "Unknown command '\(word)' for '\(path)'.\(Self.suggestion(for: word, among: names))", command: command
            )
        }
        return nil
    }

    /// " Did you mean 'list'?" when one name (or a few, equally near) is close to `word`, or "".
    static func suggestion(for word: String, among names: [String]) -> String {
        let scored = names.map { name in (name, Self.distance(word, name)) }
        // A third of the word may be wrong (one letter of `lst`, two of `craete`), and a name the
        // word begins counts as near.
        let allowed = max(1, word.count / 3)
        let near = scored.compactMap { name, distance -> (String, Int)? in
            if distance <= allowed { return (name, distance) }
            if word.count >= 3, name.hasPrefix(word) { return (name, allowed) }
            return nil
        }
        guard let best = near.map(\.1).min() else { return "" }
        var seen: Set<String> = []
        let unique = Array(near.filter { $0.1 == best }.map { "'\($0.0)'" }.filter { seen.insert($0).inserted }.prefix(3))
        let listed = unique.count > 1 ? unique.dropLast().joined(separator: ", ") + " or " + unique.last! : unique[0]
        return " Did you mean \(listed)?"
    }

    /// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
    /// two neighbours each count one (`craete` is one from `create`).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// `islet apps`: the command names from the root to `command`.
    static func path(to command: any ParsableCommand.Type, from root: any ParsableCommand.Type) -> String {
        func search(_ node: any ParsableCommand.Type, _ names: [String]) -> [String]? {
            let names = names + [node._commandName]
            if ObjectIdentifier(node) == ObjectIdentifier(command) { return names }
            return node.configuration.subcommands.lazy.compactMap { search($0, names) }.first
        }
        return (search(root, []) ?? [command._commandName]).joined(separator: " ")
    }
}

/// The options and flags a command takes, as ArgumentParser describes them (the JSON of
/// `islet <command> --experimental-dump-help`, read only when a command line was refused).
private struct KnownOptions {
    struct Option {
        var takesValue: Bool
    }

    private var byName: [String: Option] = [:]
    private(set) var longNames: [String] = []
    private(set) var takesPositionals = false

    init(of command: any ParsableCommand.Type) {
        struct Dump: Decodable {
            struct Command: Decodable { var arguments: [Argument]? }
            struct Argument: Decodable {
                struct Name: Decodable { var kind: String; var name: String }
                var kind: String
                var names: [Name]?
            }
            var command: Command
        }
        // ArgumentParser's own: help everywhere, the version at the root.
        for name in ["-h", "--help", "--version", "--experimental-dump-help", "--generate-completion-script"] {
            byName[name] = Option(takesValue: name == "--generate-completion-script")
        }
        longNames = ["--help"]
        let dump = try? JSONDecoder().decode(Dump.self, from: Data(command._dumpHelp().utf8))
        for argument in dump?.command.arguments ?? [] {
            if argument.kind == "positional" { takesPositionals = true }
            for name in argument.names ?? [] {
                let written = (name.kind == "long" ? "--" : "-") + name.name
                byName[written] = Option(takesValue: argument.kind == "option")
                if name.kind != "short" { longNames.append(written) }
            }
        }
    }

    /// The option a word names (`--state`, `--state=…`, `-q`, or short flags together, `-qj`).
    func option(_ word: String) -> Option? {
        let name = String(word.prefix { $0 != "=" })
        if let option = byName[name] { return option }
        guard !word.hasPrefix("--") else { return nil }
        let letters = word.dropFirst().map { "-\($0)" }
        guard letters.allSatisfy({ byName[$0] != nil }) else { return nil }
        return byName[letters.last!]
    }
}
