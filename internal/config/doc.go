// Package config is the one place that reads the environment.
//
// In: environment variables (the table in variables.go lists every one, its
// default and the parser that holds it to its rule; docs/CONFIGURATION.md
// documents the same list). Out: a Config of typed values, each parsed once
// at start, or every problem at once (errors.Join), each naming its
// variable, never a log.Fatal. DatabaseDSN turns the configuration into a
// PostgreSQL DSN: DATABASE_URL locally, the Secrets Manager secret named by
// DB_SECRET_ARN in AWS.
package config
