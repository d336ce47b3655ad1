// Package harness is the machinery of the end-to-end proof: hosts made of
// network namespaces, component processes in them, and readers of what a
// bundle renders.
//
// In: node addresses (NewNetwork), a rendered etcd.service or static pod
// manifest (ParseUnit, ParsePodManifest), a node's root folder (Reroot), a
// kubeconfig or PEM files (KubeConfig, MutualTLS).
// Out: namespaces joined by a bridge and a Dialer that opens sockets inside
// one of them; processes started in a node's namespace with their own
// hostname, logs and a bounded stop (Run); the rendered argv with only its
// filesystem paths moved under the node's folder; clients for the checks
// (EtcdHealth, Readyz, DryRunApply).
//
// Nothing here touches the machine's real network: addresses exist only
// inside the namespaces a Run creates, named NamePrefix<pid>-..., which
// CleanStale removes once their process is gone.
package harness
