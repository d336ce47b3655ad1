// Package testenv is the harness for integration tests: real PostgreSQL and
// real moto_server, started at most once per test binary and shared by its
// tests, with a fresh database or KMS key per call.
//
//	dsn := testenv.Postgres(t)           // fresh database, both migration sets applied
//	endpoint := testenv.Moto(t)          // moto_server endpoint (KMS, Secrets Manager)
//	client, keyID := testenv.KMSKey(t)   // a fresh symmetric KMS key in moto
//	cfg := testenv.AWSConfig(endpoint)   // SDK config for moto
//
// Reuse: DATABASE_URL and AWS_ENDPOINT_URL are used when they answer; else a
// PostgreSQL on 127.0.0.1:5432; else throwaway servers, which die with the
// test binary (parent-death signal). A missing dependency fails the test with
// one line naming it and how to install it; tests never skip silently.
package testenv
