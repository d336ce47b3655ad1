// Package config is the one place that reads the environment.
//
// In: environment variables (the table in config.go lists every one, its
// default and its check). Out: a typed Config, or every problem at once
// (errors.Join), never a log.Fatal. DatabaseDSN turns the configuration into
// a PostgreSQL DSN: DATABASE_URL locally, the Secrets Manager secret named by
// DB_SECRET_ARN in AWS.
package config
