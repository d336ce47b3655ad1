// Package vmstandin is a LOCAL-ONLY stand-in for the VMs the simulator's
// compute API makes (make local BOOT_VMS=1). Under make local no VM boots,
// so without it a cluster's bootstrap stays pending until someone plays
// the VMs by hand (README "Watch a cluster bootstrap").
//
// A stand-in is not a machine and runs nothing of the bundle: it does on
// the API side what a VM's userdata does and nothing else. For each VM it
// takes an IMDS session token and the VM's access token from the
// simulator's IMDS, fetches the VM's bundle from k8sapi with both proofs
// (as templates/bootstrap-userdata.sh does), then reports the phases a
// real node reports, in order, Delay apart: every phase a VM reports
// (clusterfacts.Reportable) but failed, the initial-node-only ones on the
// bundle's initial node only. It writes no file, starts no process and
// installs nothing; its reports say they come from a stand-in. A cluster
// it made "ready" has no API server behind its endpoint.
//
// Like the shim, it tries a fetch that fails again, every Delay for a
// while (the cluster may still be founding), then reports failed; a report
// that fails is logged and the next phase follows (a report never holds up
// a bootstrap). It takes its proofs afresh for every call, as the VM's
// scripts do, and stops as soon as IMDS no longer knows the VM (deleted)
// or the player is closed.
//
// In: Config{IMDSBaseURL, APIBaseURL, Delay, Log}; Boot(vmID) from the
// simulator's Config.Created. Out: HTTP calls to IMDS and k8sapi, net/http
// only. Never deploy it.
package vmstandin
