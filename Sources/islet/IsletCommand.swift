import ArgumentParser
import IsletServer

/// `islet`: runs the server and talks to it.
@main
struct IsletCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "islet",
        abstract: "Live Activities, self-hosted: a server and its command line.",
        discussion: """
            Run `islet serve` to start a server (data in ./.islet, listening on 127.0.0.1:8080). \
            The other commands talk to a server: --server (ISLET_URL) says which, --key (ISLET_KEY) \
            with which key; without one, on the server's machine, they send the admin key from the \
            data directory — to that server only. `islet status` shows which server, key and data \
            directory a command would use. \
            An activity's id may be given by its first characters (at least 4).

            Exit codes: 0 success, 1 refused as invalid, 3 not authorized, 4 not found, \
            5 conflict (ignored by the lifecycle rules, a limit, already exists), 6 server error, \
            7 server unreachable, 64 usage error.
            """,
        version: Islet.version,
        subcommands: [
            Serve.self, Migrate.self, Apps.self, Devices.self, Start.self, Update.self, End.self, Dismiss.self, Get.self,
            List.self, History.self, Deliveries.self, Channels.self, Watch.self, Push.self, JWT.self, Render.self, DemoCommand.self,
            Status.self,
        ]
    )
}
