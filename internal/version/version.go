// Package version holds berth's build identity, set at link time, and the
// Kubernetes release berth implements, taken from the Kubernetes modules
// it is built with.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	componentversion "k8s.io/component-base/version"
)

// Version is berth's release, overridden with -ldflags "-X berth/internal/version.Version=...".
var Version = "v0.1.0-dev"

// GitCommit is the commit berth was built from, set at link time.
var GitCommit = "unknown"

// releaseModules are the Kubernetes staging modules whose v0.MINOR.PATCH
// is Kubernetes v1.MINOR.PATCH, in order of preference: the API types,
// then component-base, which this package links into every binary.
var releaseModules = []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/component-base"}

var kubernetes = sync.OnceValue(func() string {
	info, _ := debug.ReadBuildInfo()
	return kubernetesVersion(componentversion.Get().GitVersion, info)
})

// Kubernetes is the Kubernetes release berth implements and reports (the
// apiserver's /version and OpenAPI info, the Node's kubeletVersion, the
// probes' User-Agent), e.g. "v1.37.2". It is component-base's stamped
// gitVersion when the build set one (make build stamps it from the
// k8s.io/kubectl module), else the release of the Kubernetes modules in the
// binary (k8s.io/api, …), else component-base's default release.
func Kubernetes() string { return kubernetes() }

// kubernetesVersion picks the release from the stamped version and the
// build information (either may be missing).
func kubernetesVersion(stamped string, info *debug.BuildInfo) string {
	if isRelease(stamped) {
		return stamped
	}
	if info != nil {
		for _, path := range releaseModules {
			for _, dep := range info.Deps {
				if dep.Path != path {
					continue
				}
				if dep.Replace != nil {
					dep = dep.Replace
				}
				if v, ok := strings.CutPrefix(dep.Version, "v0."); ok && isRelease("v1."+v) {
					return "v1." + v
				}
			}
		}
	}
	return "v" + componentversion.DefaultKubeBinaryVersion + ".0"
}

// isRelease reports whether v is a vMAJOR.MINOR.PATCH release (with an
// optional pre-release suffix), not component-base's unstamped placeholder.
func isRelease(v string) bool {
	if !strings.HasPrefix(v, "v") || strings.HasPrefix(v, "v0.0.0") {
		return false
	}
	major, minor, ok := majorMinor(v)
	return ok && major != "" && minor != ""
}

// majorMinor splits "v1.37.2" into "1" and "37".
func majorMinor(v string) (major, minor string, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 3 {
		return "", "", false
	}
	for _, p := range parts[:2] {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", "", false
		}
	}
	return parts[0], parts[1], true
}

// KubernetesMinor is "MAJOR.MINOR" of Kubernetes(), e.g. "1.37".
func KubernetesMinor() string {
	major, minor, _ := majorMinor(Kubernetes())
	return major + "." + minor
}

// Info is what the apiserver serves at /version: the Kubernetes release
// berth implements, berth's commit, the Go toolchain and platform.
func Info() apimachineryversion.Info {
	v := Kubernetes()
	major, minor, _ := majorMinor(v)
	return apimachineryversion.Info{
		Major:      major,
		Minor:      minor,
		GitVersion: v,
		GitCommit:  GitCommit,
		BuildDate:  componentversion.Get().BuildDate,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String renders the version line printed by `berth version`.
func String() string {
	return fmt.Sprintf("berth %s (commit %s, kubernetes %s, %s, %s/%s)",
		Version, GitCommit, Kubernetes(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
