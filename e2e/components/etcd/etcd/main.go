// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3's
// etcdmain package (the same entry point as etcd's own main).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
