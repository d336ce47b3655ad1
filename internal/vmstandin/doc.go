// Package vmstandin is a LOCAL-ONLY stand-in for the VMs the simulator's
// compute API makes (make local BOOT_VMS=1). Under make local no VM boots,
// so without it a cluster's bootstrap stays pending until someone plays
// the VMs by hand (docs/API-WALKTHROUGH.md "Watch a cluster bootstrap").
//
// A stand-in is not a machine and runs nothing of the bundle: it does on
// the API side what a VM's userdata and scripts do and nothing else, as
// the role k8sapi tagged the VM with (Boot's role; its userdata is
// rendered for the same role). For each call it takes an IMDS session
// token and the VM's access token from the simulator's IMDS, as the
// shim and scripts do.
//
//   - A control-plane node (controlplane.go) fetches its bundle from the
//     control-plane route; a restored cluster's founding node (its bundle
//     brings the restore script) downloads the snapshot and checks its
//     size and SHA-256; it reports the phases a real node reports, in
//     order, Delay apart (the initial-node-only ones on the initial node
//     only). Ready, it asks every SnapshotEvery, as the snapshot timer
//     does, for an etcd snapshot to take; given one, it uploads a line
//     that says what it is (SnapshotBytes) to the presigned URL (moto's
//     S3 locally) and reports its size and SHA-256.
//   - A worker (worker.go) fetches its bundle from the worker route (no
//     key in it), makes the kubelet's client and serving keys on the
//     stand-in, has k8sapi sign a request over each, checks each answer
//     is the cluster CA's certificate for its own key (else it reports
//     failed), and reports kubelet_started and ready.
//   - Every ready stand-in (renew.go) renews as its node's renewal timer
//     does, by proof of possession: at once when ready, then every
//     RenewEvery (a day). A control-plane node signs one request with each
//     key its bundle brought; a worker with each key it made, showing the
//     certificate each proves. Each answer must be its signer's
//     certificate over the same key; it is kept for the next renewal. A
//     refused renewal is logged and the node goes on with what it has.
//
// It writes no file, starts no process and installs nothing; its reports
// say they come from a stand-in. A cluster it made "ready" has no API
// server behind its endpoint, and its snapshots are no etcd snapshots.
//
// Like the shim, it tries a fetch that fails again, every Delay for a
// while (the cluster may still be founding), then reports failed; a report
// that fails is logged and the next phase follows (a report never holds up
// a bootstrap). It stops as soon as IMDS no longer knows the VM (deleted)
// or the player is closed.
//
// In: Config{IMDSBaseURL, APIBaseURL, Delay, SnapshotEvery, RenewEvery, Log};
// Boot(vmID, role) from the simulator's Config.Created. Out: HTTP calls to
// IMDS, k8sapi and the presigned URLs, net/http only. Never deploy it.
package vmstandin
