// Package pki creates every key and certificate of a cluster from one
// declarative table (certlist.go).
//
// In: an Issuer (clock, key algorithm, key generator), the cluster Trust (its
// three CAs and the service-account key) and the facts of one Node.
// Out: PEM key pairs. Founding calls NewTrust once per cluster and issues the
// PhaseFounding certs (stored, sealed); a bundle fetch rehydrates the Trust
// from sealed keys and issues the PhaseFetch client identities fresh.
// Nothing here touches storage or KMS.
package pki
