import Foundation
import IsletCore
@testable import IsletLiveActivities
import Testing

/// The app library speaks Islet's API with bodies of its own (it depends on nothing of the
/// server's): each is decoded here with the type the server decodes it with, so the two cannot
/// drift apart unnoticed.
@Suite("The app library: its requests as the server reads them")
struct AppLibraryWireTests {
    let installation = StoredInstallation(
        server: "https://islet.example.com", bundleId: "com.example.delivery", installationId: "inst_abc", credential: "islet_inst_x"
    )
    let backend = Backend(
        server: URL(string: "https://islet.example.com")!, clientKey: "pk_x", bundleId: "com.example.delivery", environment: .development,
        store: MemoryStore(), log: { _ in }
    )

    /// The body of `report`'s request, as JSON, with its method and path.
    func sent(_ report: Report) throws -> (method: String, path: String, body: Data) {
        let (method, path, body) = backend.request(for: report, on: installation)
        return (method, path, try JSONEncoder().encode(body))
    }

    @Test func theRegistrationIsTheServersRegisterInstallationBody() throws {
        let body = try JSONEncoder().encode(RegistrationBody(bundleId: "com.example.delivery", platform: "ios", environment: "development"))
        let read = try WireFormat.decoder().decode(RegisterInstallationBody.self, from: body)
        #expect(read == RegisterInstallationBody(bundleId: "com.example.delivery", platform: .ios, environment: .development))
        try read.check()
    }

    @Test func theServersAnswerToARegistrationIsRead() throws {
        let answer = RegisteredInstallation(
            installation: Installation(
                id: "inst_abc", bundleId: "com.example.delivery", platform: .ios, environment: .production, userId: nil, clientKeyId: "ck_1",
                createdAt: Date(timeIntervalSince1970: 1_800_000_000), lastSeenAt: Date(timeIntervalSince1970: 1_800_000_000)
            ),
            credential: "islet_inst_x"
        )
        let read = try JSONDecoder().decode(RegisteredBody.self, from: try WireFormat.encoder().encode(answer))
        #expect(read.installation.id == "inst_abc" && read.credential == "islet_inst_x")
    }

    @Test func aPushToStartTokenGoesToTheInstallationsDevice() throws {
        let (method, path, body) = try sent(.pushToStart(type: "DeliveryAttributes", token: "ab12"))
        #expect(method == "PUT" && path == "/v1/devices/inst_abc/push-to-start-tokens/DeliveryAttributes")
        #expect(try WireFormat.decoder().decode(PushToStartTokenBody.self, from: body) == PushToStartTokenBody(token: "ab12", environment: .development))
    }

    @Test func anUpdateTokenNamesTheInstallationAsItsPhone() throws {
        let (method, path, body) = try sent(.update(activity: "act/1", token: "cd34"))
        #expect(method == "PUT" && path == "/v1/activities/act%2F1/push-token", "an id is one path segment, escaped")
        #expect(try WireFormat.decoder().decode(PushTokenBody.self, from: body) == PushTokenBody(token: "cd34", device: "inst_abc"))
    }

    @Test(arguments: PhoneReportState.allCases) func aStateIsAPhoneReport(state: PhoneReportState) throws {
        let (method, path, body) = try sent(.state(activity: "act-1", state.rawValue))
        #expect(method == "POST" && path == "/v1/activities/act-1/phone-report")
        #expect(try WireFormat.decoder().decode(PhoneReportBody.self, from: body) == PhoneReportBody(state: state))
    }

    @Test func aSignInCarriesTheBackendsSignatureAndASignOutANullUser() throws {
        let signature = String(repeating: "ab", count: 32)
        let signIn = try sent(.signIn(userId: "rider-7", signature: signature))
        #expect(signIn.method == "PATCH" && signIn.path == "/v1/installations/self")
        #expect(try WireFormat.decoder().decode(InstallationUserBody.self, from: signIn.body) == InstallationUserBody(userId: "rider-7", userIdSignature: signature))
        let signOut = try sent(.signOut)
        #expect(signOut.method == "PATCH" && signOut.path == "/v1/installations/self")
        let fields = try #require(try JSONSerialization.jsonObject(with: signOut.body) as? [String: Any])
        #expect(fields.keys.sorted() == ["userId"] && fields["userId"] is NSNull, "a sign-out is `\"userId\": null`: \(fields)")
    }
}

/// A store in memory, for a backend that is never asked to send.
final class MemoryStore: InstallationStore, @unchecked Sendable {
    private let lock = NSLock()
    private var kept: StoredInstallation?
    func load() -> StoredInstallation? { lock.withLock { kept } }
    func save(_ installation: StoredInstallation) { lock.withLock { kept = installation } }
    func clear() { lock.withLock { kept = nil } }
}

@Suite("The app library: its file store")
struct FileInstallationStoreTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-store-\(UUID().uuidString)")
    var store: FileInstallationStore { FileInstallationStore(url: directory.appendingPathComponent("nested/installation.json")) }

    @Test func whatIsSavedWhereNothingWasIsLoadedAndASecondSaveReplacesIt() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(store.load() == nil)
        var installation = StoredInstallation(server: "https://islet.example.com", bundleId: "com.example.delivery", installationId: "inst_a", credential: "islet_inst_a")
        store.save(installation)
        #expect(store.load() == installation, "the first save, with no file there yet")
        installation.reported["pushToStart:DeliveryAttributes"] = "ab12"
        store.save(installation)
        #expect(store.load() == installation)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "the credential is its owner's only")
        let left = try FileManager.default.contentsOfDirectory(atPath: store.url.deletingLastPathComponent().path)
        #expect(left == ["installation.json"], "nothing left aside: \(left)")
        store.clear()
        #expect(store.load() == nil)
    }
}
