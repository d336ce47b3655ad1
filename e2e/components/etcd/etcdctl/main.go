// Command etcdctl is etcd's client, shipped beside etcd in the release
// archive the node proof's mirror serves.
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() {
	ctlv3.MustStart() // exits with etcdctl's own status on error
}
