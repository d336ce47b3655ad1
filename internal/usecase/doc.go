// Package usecase is what every operator use case is built on (the
// cluster, its node pools, its control plane, its admin kubeconfigs, and
// the reconciler that drives their operations): their dependencies (Deps),
// the deployment's settings for the clusters it founds (Settings), and the
// answers they share (the database, KMS, the platform, an org's cluster
// that is missing or not active), each written once.
//
// In: the wired dependencies. Out: helpers the resource packages call; no
// use case lives here.
package usecase
