import Foundation
import ArgumentParser
import IsletClient
import IsletCore

/// `islet devices`: virtual devices and their per-app settings.
struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create and list devices; show and change per-app settings; issue a display's key.",
        subcommands: [Create.self, ListDevices.self, GetDevice.self, Settings.self, Key.self, Token.self, FCMToken.self], defaultSubcommand: ListDevices.self
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a device.")

        @Argument(help: "The device's id, used in URLs.")
        var id: String

        @Option(help: "A name for people.")
        var name: String?

        @Option(help: "ios (an iPhone, the default) or android (an Android phone: messages reach it through FCM).")
        var platform: DevicePlatform?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let device = try await options.run { try await $0.createDevice(id: id, name: name, platform: platform) }
            if options.json { return Output(json: true).encoded(device) }
            print(device.platform == .android ? "Created Android phone \(device.id)." : "Created device \(device.id).")
        }
    }

    struct ListDevices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List devices.")

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let devices = try await options.run { try await $0.devices() }
            let output = Output(json: options.json)
            if options.json { return output.encoded(["devices": devices]) }
            output.table(["ID", "NAME", "PLATFORM", "CREATED"], devices.map { [$0.id, $0.name, $0.platform.rawValue, Output.time($0.createdAt)] })
        }
    }

    struct GetDevice: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get", abstract: "Show a device and the tokens real phones' apps reported for it: age, environment, Apple's last answer."
        )

        @Argument(help: "The device.")
        var device = DeviceID.defaultDevice

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let phone = try await options.run { try await $0.phone(device) }
            let output = Output(json: options.json)
            if options.json { return output.encoded(phone) }
            print("Device \(phone.device.id) (\(phone.device.name)), created \(Output.time(phone.device.createdAt))")
            if phone.tokens.isEmpty { return print("No phone tokens: no app reported any for this device.") }
            output.table(
                ["TOKEN", "KIND", "APP", "FOR", "ENVIRONMENT", "AGE", "LAST ANSWER", "STATE"],
                phone.tokens.map { token in
                    [
                        token.shortened, token.kind.rawValue, token.bundleId, token.attributesType ?? token.activityId.map { String($0.prefix(8)) } ?? "",
                        token.environment.rawValue, DurationText.text(Date().timeIntervalSince(token.createdAt)),
                        token.lastStatus.map { "\($0)\(token.lastReason.map { " \($0)" } ?? "") at \(Output.time(token.lastAt!))" } ?? "",
                        token.retiredAt.map { "retired (\(token.retiredReason ?? "")) \(Output.time($0))" } ?? "current",
                    ]
                }
            )
        }
    }

    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Record a real phone's push-to-start token for an app and activity type, as the app reports it (an unknown device is created)."
        )

        @Argument(help: "The device (the phone).")
        var device: String

        @Argument(help: "The activity type (the ActivityAttributes type's name).")
        var attributesType: String

        @Argument(help: "The token, hexadecimal.")
        var token: String

        @Option(help: "The token's environment: development or production.")
        var environment: APNsEnvironment

        @Option(help: "The app, with the admin key (an app's key reports for its own app).")
        var app: String?

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let recorded = try await options.run {
                try await $0.registerPushToStartToken(token, environment: environment, device: device, attributesType: attributesType, bundleId: app)
            }
            if options.json { return Output(json: true).encoded(recorded) }
            print("Recorded \(recorded.bundleId)'s push-to-start token for \(attributesType) on \(recorded.deviceId) (\(recorded.environment.rawValue)).")
        }
    }

    struct FCMToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fcm-token",
            abstract: "Record where FCM reaches an Android phone's app, as the app reports it: its registration token, or its Firebase installation ID with --fid (an unknown device is created as an Android phone)."
        )

        @Argument(help: "The device (the Android phone).")
        var device: String

        @Argument(help: "The registration token (FirebaseMessaging.getToken()); or give --fid.")
        var token: String?

        @Option(help: "The app's Firebase installation ID instead of a token (onRegistered(installationId), FirebaseInstallations.getId()).")
        var fid: String?

        @Option(help: "The app, with the admin key (an app's key reports for its own app).")
        var app: String?

        @OptionGroup var options: ClientOptions

        func validate() throws {
            if (token == nil) == (fid == nil) { throw ValidationError("Give the registration token or --fid, one of them.") }
        }

        func run() async throws {
            let address: FCMAddress = fid.map(FCMAddress.fid) ?? .token(token!)
            let recorded = try await options.run { try await $0.registerFCMAddress(address, device: device, bundleId: app) }
            if options.json { return Output(json: true).encoded(recorded) }
            print("Recorded \(recorded.bundleId)'s \(address.name) on Android phone \(recorded.deviceId).")
        }
    }

    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Issue a device's display key and print the display's address with it.",
            discussion: """
                A server that listens beyond loopback (server.host other than 127.0.0.1) shows a device's \
                display only with that device's key. A new key replaces the old one at once.
                """
        )

        @Argument(help: "The device.")
        var device = DeviceID.defaultDevice

        @OptionGroup var options: ClientOptions

        func run() async throws {
            let (issued, url) = try await options.run { client in
                let issued = try await client.issueDeviceKey(device: device)
                return (issued, client.displayURL(device: device, key: issued.key))
            }
            if options.json { return Output(json: true).encoded(["deviceId": issued.deviceId, "key": issued.key, "displayURL": url]) }
            print("""
                Display key for device \(issued.deviceId) (shown once; it replaces any earlier key):
                  \(issued.key)
                Open the display with it:
                  \(url)
                """)
        }
    }

    struct Settings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "settings",
            abstract: "Show a device's per-app settings, or change one app's.",
            discussion: "Turning Live Activities off for an app ends and dismisses its activities on the device."
        )

        @Argument(help: "The device.")
        var device = DeviceID.defaultDevice

        @Option(help: "The app whose settings change.")
        var app: String?

        @Option(help: "Live Activities for the app: on or off.")
        var activities: Toggle?

        @Option(help: "Frequent updates for the app: on or off.")
        var frequentUpdates: Toggle?

        @Option(help: "On an Android phone: reach the app by its Firebase installation ID, on or off (off retires the ID).")
        var fcmInstallationId: Toggle?

        @Flag(help: "Print only the app's FCM registration token on this Android phone (with --app).")
        var fcmToken = false

        @Flag(help: "Print only the app's Firebase installation ID on this Android phone (with --app).")
        var fid = false

        @OptionGroup var options: ClientOptions

        enum Toggle: String, ExpressibleByArgument {
            case on, off
        }

        func validate() throws {
            let changes = activities != nil || frequentUpdates != nil || fcmInstallationId != nil
            if changes && app == nil {
                throw ValidationError("Name the app to change with --app.")
            }
            if fcmToken && fid {
                throw ValidationError("--fcm-token and --fid each print one thing: give one of them.")
            }
            if (fcmToken || fid) && (app == nil || changes) {
                throw ValidationError("--\(fid ? "fid" : "fcm-token") prints one app's: give --app, and nothing to change.")
            }
        }

        func run() async throws {
            let output = Output(json: options.json)
            if let app, activities != nil || frequentUpdates != nil || fcmInstallationId != nil {
                let settings = try await options.run {
                    try await $0.updateSettings(
                        device: device, bundleId: app, activitiesEnabled: activities.map { $0 == .on },
                        frequentUpdates: frequentUpdates.map { $0 == .on }, fcmInstallationIdEnabled: fcmInstallationId.map { $0 == .on }
                    )
                }
                if options.json { return output.encoded(settings) }
                return output.table(["APP", "ACTIVITIES", "FREQUENT UPDATES"], [Self.row(settings)])
            }
            var settings = try await options.run { try await $0.settings(device: device) }
            if let app { settings = settings.filter { $0.bundleId == app } }
            if fcmToken || fid {
                guard let value = fid ? settings.first?.fcmInstallationId : settings.first?.fcmToken else {
                    throw CommandFailure(
                        fid
                            ? "\(device) holds no Firebase installation ID for \(app ?? ""): turn it on with --fcm-installation-id on (an Android phone only)."
                            : "\(device) holds no FCM registration token for \(app ?? ""): is it an Android phone (islet devices create … --platform android), and the app on this server?"
                    )
                }
                return print(value)
            }
            if options.json { return output.encoded(["settings": settings]) }
            output.table(["APP", "ACTIVITIES", "FREQUENT UPDATES"], settings.map(Self.row))
        }

        static func row(_ settings: AppSettings) -> [String] {
            [settings.bundleId, settings.activitiesEnabled ? "on" : "off", settings.frequentUpdates ? "on" : "off"]
        }
    }
}
