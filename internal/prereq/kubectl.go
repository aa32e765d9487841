package prereq

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DefaultKubectlDir is where hack/kubectl/build.sh (make kubectls) puts
// upstream kubectl of each release, as v1.XX.Y/kubectl, unless
// $BERTH_KUBECTL_DIR says otherwise.
const DefaultKubectlDir = "/var/cache/berth/kubectl"

// KubectlDir is $BERTH_KUBECTL_DIR, or DefaultKubectlDir.
func KubectlDir() string {
	if d := os.Getenv("BERTH_KUBECTL_DIR"); d != "" {
		return d
	}
	return DefaultKubectlDir
}

// KubectlPath is the kubectl of a minor release ("1.27") that build.sh
// built into KubectlDir: the newest patch release there. The tests never use
// a kubectl from PATH or elsewhere on the machine.
func KubectlPath(minor string) (string, error) {
	dir := KubectlDir()
	matches, err := filepath.Glob(filepath.Join(dir, "v"+minor+".*", "kubectl"))
	if err != nil {
		return "", err
	}
	best, bestPatch := "", -1
	for _, m := range matches {
		patch, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "v"+minor+"."))
		if err != nil || patch <= bestPatch {
			continue
		}
		if fi, err := os.Stat(m); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		best, bestPatch = m, patch
	}
	if best == "" {
		return "", fmt.Errorf("no kubectl %s in %s (v%s.*/kubectl): run `make kubectls` (hack/kubectl/build.sh)", minor, dir, minor)
	}
	return best, nil
}

// Kubectl is KubectlPath for a test: when the release is missing, the test
// fails under CI=true and is skipped elsewhere.
func Kubectl(tb testing.TB, minor string) string {
	tb.Helper()
	path, err := KubectlPath(minor)
	if err != nil {
		Missing(tb, "%v", err)
	}
	return path
}
