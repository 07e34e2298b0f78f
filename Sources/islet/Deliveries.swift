import ArgumentParser
import Foundation
import IsletClient
import IsletCore

/// `islet deliveries`: an activity's delivery log — every APNs request and Apple's answer.
struct Deliveries: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an activity's delivery log: every request to Apple, its priority and why, and Apple's answer.",
        discussion: "How to read it: docs/delivery.md."
    )

    @Argument(help: "The activity's id, or its first characters.")
    var id: String

    @OptionGroup var options: ClientOptions

    func run() async throws {
        let lines = try await options.run { try await $0.deliveries(id) }
        let output = Output(json: options.json)
        if options.json { return output.encoded(["deliveries": lines]) }
        if lines.isEmpty { return print("No deliveries: the activity is not on a phone that Islet delivers to (docs/delivery.md).") }
        output.table(
            ["TIME", "#", "EVENT", "OUTCOME", "TRY", "PRIORITY", "STATUS", "TARGET", "REQUEST-ID", "NOTE"],
            lines.map { line in
                let report = line.report
                return [
                    Output.time(line.time), "\(report.delivery)", report.event, report.outcome.rawValue,
                    report.attempt == 0 ? "" : "\(report.attempt)", report.priority.map(String.init) ?? "",
                    [report.status.map(String.init), report.reason].compactMap { $0 }.joined(separator: " "),
                    report.target ?? "", report.apnsId.map { String($0.prefix(8)) } ?? "",
                    [report.priorityReason.map { "priority: \($0)" }, report.note, report.latencyMs.map { "\(Int($0.rounded())) ms" }]
                        .compactMap { $0 }.joined(separator: "; "),
                ]
            }
        )
    }
}
