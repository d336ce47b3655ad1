// Package pki creates every key and certificate of a cluster from one
// declarative table (certlist.go).
//
// In: an Issuer (clock, key algorithm, key generator), the cluster Trust (its
// three CAs and the service-account key) and a Subject (the names and
// addresses of the node a certificate is for).
// Out: PEM key pairs. Founding calls NewTrust once per cluster and issues the
// PhaseFounding certs (stored, sealed); the first bundle fetch of each
// bootstrap window rehydrates the Trust and issues the PhaseFetch ones
// (stored, sealed, served again for the window). A renewal checks a node's
// possession of its key (ProvePossession) and re-issues over that key
// (Reissue). Nothing here touches storage or KMS.
package pki
