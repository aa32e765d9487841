// Command printversion prints what berth/internal/version reports, for
// the package's test to build without and with the Makefile's stamp.
package main

import (
	"fmt"

	"berth/internal/version"
)

func main() {
	info := version.Info()
	fmt.Println(version.Kubernetes(), info.Major, info.Minor, version.KubernetesMinor())
}
