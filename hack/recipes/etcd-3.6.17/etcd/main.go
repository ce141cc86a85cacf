// The etcd server, as etcd's own release builds it: etcdmain.Main behind a main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
