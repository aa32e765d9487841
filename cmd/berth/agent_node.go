package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"

	"berth/agent"
	"berth/agent/eviction"
	"berth/agent/kubeletconfig"
	"berth/agent/node"
	"berth/internal/errdefs"
)

// nodeResourceFlags are the kubelet's flags for the node's resources:
// eviction thresholds, reserved resources, pods capacity, registration
// taints and labels, status frequency. They are kept as given and parsed
// by apply, only when given (so a --config file fills the others).
type nodeResourceFlags struct {
	evictionHard, evictionSoft, evictionSoftGrace, evictionMinReclaim string
	evictionMaxPodGrace                                               int
	evictionTransition                                                time.Duration
	maxPods                                                           int
	systemReserved, kubeReserved                                      string
	taints, labels                                                    string
	statusUpdateFrequency                                             time.Duration
}

func (n *nodeResourceFlags) register(f *pflag.FlagSet) {
	f.StringVar(&n.evictionHard, "eviction-hard", node.DefaultEvictionHard().String(), `hard eviction thresholds, e.g. "memory.available<100Mi,nodefs.available<10%": pods are evicted at once when one is met ("" for none)`)
	f.StringVar(&n.evictionSoft, "eviction-soft", "", "soft eviction thresholds: pods are evicted once one is met for its --eviction-soft-grace-period")
	f.StringVar(&n.evictionSoftGrace, "eviction-soft-grace-period", "", `grace periods of the soft thresholds, e.g. "memory.available=1m30s"`)
	f.StringVar(&n.evictionMinReclaim, "eviction-minimum-reclaim", "", `how much more than a threshold to free once it is met, e.g. "memory.available=0Mi,nodefs.available=500Mi"`)
	f.IntVar(&n.evictionMaxPodGrace, "eviction-max-pod-grace-period", 0, "most seconds a pod evicted for a soft threshold gets to stop (at least 2)")
	f.DurationVar(&n.evictionTransition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays after its threshold was last met")
	f.IntVar(&n.maxPods, "max-pods", node.DefaultMaxPods, "the node's pods capacity")
	f.StringVar(&n.systemReserved, "system-reserved", "", `resources reserved for the system, e.g. "cpu=100m,memory=500Mi,ephemeral-storage=1Gi,pid=1000"`)
	f.StringVar(&n.kubeReserved, "kube-reserved", "", "resources reserved for the node's Kubernetes daemons, as --system-reserved")
	f.StringVar(&n.taints, "register-with-taints", "", `taints the Node registers with, "key=value:Effect,..."`)
	f.StringVar(&n.labels, "node-labels", "", `labels the Node registers with, "key=value,..."`)
	f.DurationVar(&n.statusUpdateFrequency, "node-status-update-frequency", node.DefaultStatusUpdateFrequency, "how often the node's status is computed, and written when it changed")
}

// apply parses the flags given (changed) into cfg; errors name the flag.
func (n *nodeResourceFlags) apply(cfg *agent.Config, changed func(string) bool) error {
	bad := func(flag string, err error) error {
		return fmt.Errorf("--%s: %w: %w", flag, err, errdefs.ErrInvalidArgument)
	}
	var err error
	for _, t := range []struct {
		flag  string
		value string
		dst   *node.Thresholds
		parse func(string) (node.Thresholds, error)
	}{
		{"eviction-hard", n.evictionHard, &cfg.EvictionHard, node.ParseThresholds},
		{"eviction-soft", n.evictionSoft, &cfg.EvictionSoft, node.ParseThresholds},
		{"eviction-minimum-reclaim", n.evictionMinReclaim, &cfg.EvictionMinimumReclaim, eviction.ParseMinimumReclaims},
	} {
		if changed(t.flag) {
			if *t.dst, err = t.parse(t.value); err != nil {
				return bad(t.flag, err)
			}
		}
	}
	if changed("eviction-soft-grace-period") {
		if cfg.EvictionSoftGracePeriod, err = eviction.ParseGracePeriods(n.evictionSoftGrace); err != nil {
			return bad("eviction-soft-grace-period", err)
		}
	}
	if changed("eviction-max-pod-grace-period") {
		cfg.EvictionMaxPodGracePeriod = time.Duration(n.evictionMaxPodGrace) * time.Second
	}
	if changed("eviction-pressure-transition-period") {
		cfg.EvictionPressureTransitionPeriod = n.evictionTransition
	}
	if changed("max-pods") {
		cfg.MaxPods = int64(n.maxPods)
	}
	if changed("node-status-update-frequency") {
		cfg.NodeStatusUpdateFrequency = n.statusUpdateFrequency
	}
	for _, r := range []struct {
		flag, value string
		dst         *v1.ResourceList
	}{{"system-reserved", n.systemReserved, &cfg.SystemReserved}, {"kube-reserved", n.kubeReserved, &cfg.KubeReserved}} {
		if !changed(r.flag) {
			continue
		}
		m, err := keyValues(r.value)
		if err == nil {
			*r.dst, err = kubeletconfig.ResourceList(m)
		}
		if err != nil {
			return bad(r.flag, err)
		}
	}
	if changed("node-labels") {
		if cfg.NodeLabels, err = keyValues(n.labels); err != nil {
			return bad("node-labels", err)
		}
	}
	if changed("register-with-taints") {
		if cfg.RegisterWithTaints, err = parseTaints(n.taints); err != nil {
			return bad("register-with-taints", err)
		}
	}
	return nil
}

// keyValues reads "k=v,k2=v2".
func keyValues(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads "key=value:Effect,key:Effect", the kubelet's syntax.
func parseTaints(s string) ([]v1.Taint, error) {
	var out []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		if spec = strings.TrimSpace(spec); spec == "" {
			continue
		}
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("invalid taint spec: %v", spec)
		}
		key, value, _ := strings.Cut(kv, "=")
		switch e := v1.TaintEffect(effect); e {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("invalid taint effect: %v, unsupported taint effect", effect)
		}
		if key == "" {
			return nil, fmt.Errorf("invalid taint spec: %v", spec)
		}
		out = append(out, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	return out, nil
}
