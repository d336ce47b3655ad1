// Package bundle renders the bootstrap bundle of one control-plane VM: every
// file the VM needs to become a node (PKI, kubeconfigs, cluster.env, systemd
// units, static pod manifests, addon manifests, scripts), plus the metadata
// GET /bootstrap/control-plane/{vm_id} returns beside them.
//
// In: an Input (the cluster and all control-plane peers as
// internal/clusterfacts has them, which VM the bundle is for, artifact
// mirrors, CA certificates, the service-account key and the PEM identities
// the caller minted). Out: a Bundle whose files are sorted by path.
//
// The renderer is pure: no database, no KMS, no key generation, no clock. The
// caller mints identities and passes PEMs in, so a fixed input renders to the
// same bytes every time (the golden tests rely on it). Templates live in the
// repository's templates/ directory, are embedded, and are parsed once by
// NewRenderer with missingkey=error and a small FuncMap: escapers, the
// VM's shell library's data and the check of a reported phase (shell.go).
//
// The files come from an explicit, ordered list of parts (parts.go), one per
// component, each returning the specs of its files: output path, template,
// mode and data. The cluster's CNI (clusterfacts.CNI) decides the network part's
// files: Cilium's helm values, or the bridge CNI's per-node conflist and
// routes, whose pod subnets come from one carve by ordinal
// (clusterfacts.NodePodCIDR).
package bundle
