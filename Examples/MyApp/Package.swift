// swift-tools-version:6.2
// An app that only talks to an Islet server: it depends on IsletKit alone, which builds IsletKit,
// IsletClient and IsletCore and their HTTP client — nothing of the server (no Hummingbird, GRDB,
// postgres-nio or tracing exporter). `check-dependencies` holds it to that; the README's IsletKit
// snippet is `Sources/MyApp/main.swift`.
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
    ]
)
