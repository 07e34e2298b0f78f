import Foundation
import PackagePlugin

/// Embeds a target's asset folders (those named in `folders` that exist) as Swift strings in a
/// generated `EmbeddedFiles` enum, rebuilt whenever one of the files changes — and only then:
/// a build with nothing changed runs nothing. The folders are
/// excluded from the target in Package.swift, so SwiftPM does not treat them as resources.
@main
struct EmbedFilesPlugin: BuildToolPlugin {
    static let folders = ["Icons", "Assets", "Display", "OpenAPI"]

    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let present = Self.folders
            .map { target.directoryURL.appending(path: $0) }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
        // Files only, in a stable order: the command must read the same at every build plan, or
        // the build system takes it for a new one and runs it (and everything after it) again.
        let inputs = present.flatMap { folder in
            (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])?.allObjects as? [URL]) ?? []
        }
        .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        .sorted { $0.path < $1.path }
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
