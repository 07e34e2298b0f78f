import IsletCore
import Testing

/// Apple's limits on a set of keys in one environment (docs/delivery.md, "Key sets"), as both the
/// sender and Islet playing Apple apply them.
struct KeySetTests {
    func members(team: Int, topic: Int = 0) -> [KeySet.Member] {
        (0..<team).map { KeySet.Member(keyId: "TEAM\($0)", scope: .team) } + (0..<topic).map { KeySet.Member(keyId: "TOPIC\($0)", scope: .topic) }
    }

    func refusal(_ body: () throws -> Void) -> ErrorReason? {
        do {
            try body()
            return nil
        } catch {
            return (error as? IsletError)?.reason ?? .internalError
        }
    }

    @Test func anEnvironmentHoldsTwoTeamKeysAndATwoHundredTopicKeys() {
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .team, topics: [], relatedKeyId: nil, to: members(team: 1, topic: 150)) } == nil)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .team, topics: [], relatedKeyId: nil, to: members(team: 2)) } == .tooManyKeys)
        // Registering a key again replaces it: not a third.
        #expect(refusal { try KeySet.check(adding: "TEAM1", scope: .team, topics: [], relatedKeyId: nil, to: members(team: 2)) } == nil)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: ["a"], relatedKeyId: nil, to: members(team: 2, topic: 199)) } == nil)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: ["a"], relatedKeyId: nil, to: members(team: 0, topic: 200)) } == .tooManyKeys)
    }

    @Test func aTopicKeyNamesOneToFourHundredTopicsAndAnotherKeyAsRelated() {
        let many = (0...400).map { "com.example.app\($0)" }
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: Array(many.prefix(400)), relatedKeyId: "OLD", to: []) } == nil)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: many, relatedKeyId: nil, to: []) } == .invalidRequest)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: [], relatedKeyId: nil, to: []) } == .invalidRequest)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .topic, topics: ["a"], relatedKeyId: "NEW", to: []) } == .invalidRequest)
        #expect(refusal { try KeySet.check(adding: "NEW", scope: .team, topics: [], relatedKeyId: "OLD", to: []) } == .invalidRequest)
    }

    @Test func theNewestUnrefusedKeySignsAndTiesGoByKeyId() {
        struct Key { var id: String; var at: Double; var refused = false }
        func signer(_ keys: [Key]) -> String? {
            KeySet.signer(keys, createdAt: \.at, keyId: \.id, refused: \.refused)?.id
        }
        #expect(signer([Key(id: "A", at: 1), Key(id: "B", at: 2)]) == "B")
        #expect(signer([Key(id: "A", at: 1), Key(id: "B", at: 2, refused: true)]) == "A")
        #expect(signer([Key(id: "B", at: 1), Key(id: "A", at: 1)]) == "B")
        #expect(signer([Key(id: "A", at: 1, refused: true)]) == nil)
        #expect(signer([]) == nil)
    }
}
