import Foundation
import IsletKit
import PhoneApp

// The example phone app, run on Linux: IsletKit plays ActivityKit against an Islet that plays
// Apple and the phone (ISLET_URL, ISLET_KEY: that Islet and the app's key there), and the app
// reports its tokens to the Islet that is its backend (BACKEND_URL, BACKEND_KEY, DEVICE).
// README, "Driving real iPhones".
let environment = ProcessInfo.processInfo.environment
guard let backend = environment["BACKEND_URL"].flatMap(URL.init(string:)), let key = environment["BACKEND_KEY"] else {
    FileHandle.standardError.write(Data("""
        Usage: ISLET_URL=<the Islet playing the phone> ISLET_KEY=<the app's key there> \\
               BACKEND_URL=<the Islet that is the backend> BACKEND_KEY=<the app's key there> \\
               [DEVICE=<this phone's id at the backend, default phone-1>] [ENVIRONMENT=development|production] \\
               swift run phone-app

        """.utf8))
    exit(2)
}
/// Each line as it happens, even when the output is a pipe.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
let tokens = LiveActivityTokens(
    backend: backend, apiKey: key, deviceId: environment["DEVICE"] ?? "phone-1",
    environment: environment["ENVIRONMENT"] ?? "development", log: say
)
say("phone-app: reporting this phone's Live Activity tokens to \(backend.absoluteString) as device \(tokens.deviceId)")
await tokens.run()
