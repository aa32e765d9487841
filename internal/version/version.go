// Package version holds berth's build identity, set at link time.
package version

import (
	"fmt"
	"runtime"
)

// Version is berth's release, overridden with -ldflags "-X berth/internal/version.Version=...".
var Version = "v0.1.0-dev"

// GitCommit is the commit berth was built from, set at link time.
var GitCommit = "unknown"

// KubernetesVersion is the Kubernetes API version berth implements and reports
// (as kubeletVersion and from the apiserver's /version).
const KubernetesVersion = "v1.34.0"

// String renders the version line printed by `berth version`.
func String() string {
	return fmt.Sprintf("berth %s (commit %s, kubernetes %s, %s, %s/%s)",
		Version, GitCommit, KubernetesVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
