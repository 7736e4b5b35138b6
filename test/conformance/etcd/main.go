// Command etcd is etcd's server at the version k8s.io/kubernetes v1.37.2
// depends on, for the stand-in of upstream's registry.k8s.io/etcd image
// (the aggregator spec runs it beside the sample API server).
// hack/conformance-images.sh builds it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
