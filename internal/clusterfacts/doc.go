// Package clusterfacts is what k8sapi knows about a cluster, as types: the
// cluster (ids, names, Kubernetes version, key algorithm, CNI, networks),
// its control-plane nodes (one Node type for every reader), the bootstrap
// phases a node passes, and the rules derived from those facts alone: the
// service IPs, each node's pod subnet under the bridge CNI, the
// control-plane name's DNS records and the names a node's certificates
// carry.
//
// In: a cluster's stored rows. FromRows is the one conversion from them:
// the stored spellings of the algorithm and the CNI are parsed there, once,
// and a row that holds an unknown one is an error there rather than a
// string every later reader must doubt. Out: values the use cases pass on;
// bundle renders them, keyring seals the cluster's keys, store stores the
// rows.
//
// Pure: no database, no KMS, no clock. It sits low in the import graph
// (pki and store's row types only), so bundle, founding, nodebootstrap and
// progress can all depend on it.
package clusterfacts
