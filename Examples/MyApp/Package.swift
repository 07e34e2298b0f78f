// swift-tools-version:6.2
// Apps that only talk to an Islet server: one depends on IsletKit alone, which builds IsletKit,
// IsletClient and IsletCore and their HTTP client — nothing of the server (no Hummingbird, GRDB,
// postgres-nio or tracing exporter); one on the app library IsletLiveActivities, which adds
// nothing to that. `check-dependencies` holds both to it; the README's IsletKit snippet is
// `Sources/MyApp/main.swift`, its app library snippet `Sources/MyiOSApp/main.swift`.
import Foundation
import PackageDescription

// This repository, two levels up. A local package is named by its directory, which is a
// checkout's name (`islet`, or whatever it was cloned as); in your own package, write
// `.package(path: "../islet")` and `package: "islet"`, or Islet's git URL.
let islet = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

let package = Package(
    name: "MyApp",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: islet.path)],
    targets: [
        .executableTarget(name: "my-app", dependencies: [.product(name: "IsletKit", package: islet.lastPathComponent)], path: "Sources/MyApp"),
        // An iOS app's Live Activity tokens kept fresh by the app library: the README's snippet.
        .executableTarget(
            name: "my-ios-app", dependencies: [.product(name: "IsletLiveActivities", package: islet.lastPathComponent)], path: "Sources/MyiOSApp"
        ),
    ]
)
