package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	componentversion "k8s.io/component-base/version"
)

func TestKubernetesVersionSources(t *testing.T) {
	api := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/apimachinery", Version: "v0.30.0"}, {Path: "k8s.io/api", Version: v}}}
	}
	fallback := "v" + componentversion.DefaultKubeBinaryVersion + ".0"
	for _, tc := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"stamped by make build", "v1.37.2", api("v0.36.0"), "v1.37.2"},
		{"unstamped: the k8s.io/api module", "v0.0.0-master+$Format:%H$", api("v0.37.2"), "v1.37.2"},
		{"pre-release module", "v0.0.0-master+$Format:%H$", api("v0.38.0-alpha.1"), "v1.38.0-alpha.1"},
		{"replaced module", "", &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.37.3"}}}}, "v1.37.3"},
		{"module without a version (local replace)", "", &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2", Replace: &debug.Module{Path: "../api"}}}}, fallback},
		{"no build information", "", nil, fallback},
		{"no k8s.io/api linked: component-base", "", &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/component-base", Version: "v0.37.1"}}}, "v1.37.1"},
		{"garbage stamp", "1.37", api("v0.37.2"), "v1.37.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubernetesVersion(tc.stamped, tc.info); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A binary built without ldflags reports the release of go.mod's
// k8s.io/api; one stamped as make build does reports the stamp. (Test
// binaries carry no module information, so a small program is built.)
func TestBinaryReportsItsModules(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.(\d+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api v0.X.Y")
	}
	minor := string(m[1])
	want := "v1." + minor + "." + string(m[2])
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, tc := range []struct {
		name, ldflags, want string
	}{
		{"unstamped", "", want + " 1 " + minor + " 1." + minor},
		{"stamped", "-X k8s.io/component-base/version.gitVersion=v1.99.1", "v1.99.1 1 99 1.99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "printversion")
			build := exec.Command(goBin, "build", "-ldflags", tc.ldflags, "-o", bin, "./testdata/printversion")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("printed %q, want %q", got, tc.want)
			}
		})
	}
}
