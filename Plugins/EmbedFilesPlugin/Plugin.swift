import Foundation
import PackagePlugin

/// Embeds a target's asset folders (those named in `folders` that exist) as Swift strings in a
/// generated `EmbeddedFiles` enum, rebuilt whenever one of the files changes. The folders are
/// excluded from the target in Package.swift, so SwiftPM does not treat them as resources.
@main
struct EmbedFilesPlugin: BuildToolPlugin {
    static let folders = ["Icons", "Assets", "Display", "OpenAPI"]

    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let present = Self.folders
            .map { target.directoryURL.appending(path: $0) }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
        let inputs = present.flatMap { folder in
            (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.allObjects as? [URL]) ?? []
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(present.map(\.lastPathComponent).joined(separator: ", ")) in \(target.name)",
                executable: try context.tool(named: "EmbedFiles").url,
                arguments: ["EmbeddedFiles", output.path] + present.map(\.path),
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
