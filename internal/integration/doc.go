// Package integration holds tests that drive k8sapi's HTTP handlers
// in-process against the real parts: a fresh PostgreSQL database, moto's
// KMS, and the platform simulator over real HTTP. It has no non-test code.
package integration
