// Command coredns is the cluster DNS image of the node proof, CoreDNS with
// its standard plugin set.
package main

import (
	_ "github.com/coredns/coredns/core/plugin" // registers every standard plugin
	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
