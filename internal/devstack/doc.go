// Package devstack is LOCAL ONLY: it starts and wires the real parts the
// project runs on during development and tests, and is never linked into a
// Lambda function.
//
// What goes in: a scratch directory (git-ignored, e.g. .local/) and a logger.
// What comes out:
//
//   - EnsurePostgres: a DSN of a PostgreSQL server (DATABASE_URL if it answers,
//     else 127.0.0.1:5432 if it answers, else a throwaway cluster started
//     from the system's initdb/postgres binaries as the postgres user).
//   - CreateDatabase / ApplyMigrations: fresh databases with the embedded
//     migrations applied by tern.
//   - StartMoto, CreateKMSKey, PutDBSecret: moto_server standing in for KMS
//     and Secrets Manager.
//   - RuntimeAPI, Gateway, Invoke: a local Lambda Runtime API that runs each
//     function's real bootstrap binary, and an API Gateway (HTTP API, payload
//     v2) whose routes come from template.yaml. A Fleet runs a function in
//     several Runners when requests overlap, as Lambda scales out.
//   - Run: the whole `make local` stack in one process tree. With
//     Options.BootVMs (`make local BOOT_VMS=1`) each VM the simulator
//     creates fetches its bundle and reports its phases as a stand-in
//     (internal/vmstandin), so a bootstrap finishes with no machine.
//
// Every process it starts lives in its own process group and carries a parent
// death signal, so a crashed or killed parent leaves nothing running.
package devstack
