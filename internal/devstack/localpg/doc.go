// Package localpg provides the PostgreSQL of local runs and tests, LOCAL
// ONLY.
//
//   - EnsurePostgres (postgres.go): a server that answers, in this order:
//     DATABASE_URL, 127.0.0.1:5432 (trust auth, user postgres), or a
//     throwaway cluster it initialises and starts under a scratch folder
//     (as the postgres user when we are root).
//   - PostgresServer (pgserver.go): a throwaway server of a test's own,
//     stopped and started again on the same port (fault injection).
//   - CreateDatabase, DropDatabase, UniqueDatabaseName, WithDatabase,
//     WithUser, ApplyMigrations (migrate.go): databases and DSNs, with the
//     migrations of internal/dbmigrate applied.
//   - EnsureFunctionLogins, FunctionDSN (roles.go): each function's own
//     login user (internal/dbroles), as a deployment creates them.
//
// It imports proc for the server processes.
package localpg
