package containerd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capSysResource is CAP_SYS_RESOURCE's bit in the CapEff mask.
const capSysResource = 24

// NeedRestrictOOMScoreAdj reports whether this process lacks
// CAP_SYS_RESOURCE (read from /proc/self/status): then neither containerd
// nor its shims can set the negative oom_score_adj they give sandboxes, and
// containerd must run with restrict_oom_score_adj.
func NeedRestrictOOMScoreAdj() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("containerd: capabilities: %w", err)
	}
	return restrictFromStatus(string(b))
}

// restrictFromStatus reads the CapEff line of a /proc/PID/status text.
func restrictFromStatus(status string) (bool, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("containerd: capabilities: CapEff %q: %w", strings.TrimSpace(v), err)
			}
			return caps&(1<<capSysResource) == 0, nil
		}
	}
	return false, errors.New("containerd: capabilities: no CapEff line in /proc/self/status")
}

// ResolveRestrictOOMScoreAdj is the restrict_oom_score_adj setting for c:
// RestrictOOMScoreAdj when set, else NeedRestrictOOMScoreAdj's answer.
func (c Config) ResolveRestrictOOMScoreAdj() (bool, error) {
	if c.RestrictOOMScoreAdj != nil {
		return *c.RestrictOOMScoreAdj, nil
	}
	return NeedRestrictOOMScoreAdj()
}
