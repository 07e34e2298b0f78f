import Foundation
import IsletKit
import IsletLiveActivities
import PhoneApp

// The example phone app, run on Linux: IsletKit plays ActivityKit against an Islet that plays
// Apple and the phone (ISLET_URL, ISLET_KEY: that Islet and the app's key there), and the app
// library keeps its tokens fresh at the Islet that is its backend (BACKEND_URL) with nothing but
// the app's client key (CLIENT_KEY). README, "Driving real iPhones"; docs/installations.md.
let environment = ProcessInfo.processInfo.environment
guard let backend = environment["BACKEND_URL"].flatMap(URL.init(string:)), let clientKey = environment["CLIENT_KEY"] else {
    FileHandle.standardError.write(Data("""
        Usage: ISLET_URL=<the Islet playing the phone> ISLET_KEY=<the app's key there> \\
               BACKEND_URL=<the Islet that is the backend> CLIENT_KEY=<the app's client key there, pk_…> \\
               [BUNDLE_ID=com.example.delivery] [ENVIRONMENT=development|production] [STORE=<file it keeps its installation in>] \\
               [USER_ID=<a signed-in user> USER_SIGNATURE=<the backend's signature of it>] \\
               swift run phone-app

        """.utf8))
    exit(2)
}
/// Each line as it happens, even when the output is a pipe.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let activities = LiveActivities.start(
    server: backend, clientKey: clientKey, bundleId: environment["BUNDLE_ID"] ?? "com.example.delivery",
    environment: environment["ENVIRONMENT"] == "production" ? .production : .development,
    store: FileInstallationStore(url: URL(fileURLWithPath: environment["STORE"] ?? ".phone-app-installation.json")), log: say
)
activities.track(DeliveryAttributes.self)
if let userId = environment["USER_ID"], let signature = environment["USER_SIGNATURE"] {
    await activities.signIn(userId: userId, signature: signature)
}
say("phone-app: keeping this phone's Live Activity tokens fresh at \(backend.absoluteString)")
while true { try await Task.sleep(for: .seconds(3_600)) }
