// Package devstack is LOCAL ONLY: it composes the packages under it into
// the stack `make local` runs and the single invocation `make invoke`
// runs, and is never linked into a Lambda function.
//
//   - Run (stack.go): the whole `make local` stack in one process tree, as
//     a list of named boot steps: read template.yaml, take the gateway port
//     (it answers 503 naming the step until the functions are up), build
//     the functions while PostgreSQL and moto start, create and migrate the
//     database, create the KMS key, the database secret and the snapshots'
//     bucket, start the platform simulator (simulator.go), seed the dev
//     tokens, start a Fleet per function, serve the gateway, run the
//     scheduled functions, and write .local/stack.env and env.json. Every
//     part's stop goes on one cleanup stack as soon as it runs, so a failing
//     step, Ctrl-C or the end of ctx leaves nothing behind. With
//     Options.BootVMs (`make local BOOT_VMS=1`) each VM the simulator
//     creates boots as a stand-in (internal/vmstandin), so a bootstrap
//     finishes with no machine.
//   - Stack, FunctionEnv, FunctionOverrides (env.go): what the running stack
//     is (the stack.env file, read back by StackFromEnv) and the
//     environment each function gets from it: the shared overrides, its own
//     database login, the service token for scheduled functions only, and
//     the variables passed through from the caller's environment.
//   - Invoke (invoke.go): `make invoke`, one function built and run once
//     through the Runtime API with an event, like `sam local invoke -e`.
//
// The parts live below, and none of them imports this package:
//
//   - samtemplate: template.yaml as the stack reads it (functions, routes,
//     schedules, environment).
//   - gateway: API Gateway HTTP API (payload 2.0) in front of the functions.
//   - lambdaruntime: the Lambda Runtime API, the function processes and
//     their fleets, the function builds and the schedules.
//   - localpg: PostgreSQL servers, databases, migrations, function logins.
//   - localaws: moto_server and the KMS key, secret and bucket in it.
//   - proc: child processes in their own group with a parent-death signal.
//   - devtest: test support (the echo function fixture, a test logger).
package devstack
