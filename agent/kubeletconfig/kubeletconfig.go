// Package kubeletconfig reads a kubelet configuration file — a
// KubeletConfiguration of kubelet.config.k8s.io/v1beta1, the kubelet's
// --config — onto the agent's Config. Fields berth supports are applied
// unless the matching command-line flag was given (flags override the
// file, as the kubelet's); fields it does not support are named in
// warnings; a field berth cannot honour safely (anonymous access, an
// authorization mode other than Webhook) or cannot parse is an error
// naming it, as is a field the type does not have (strict decoding).
package kubeletconfig

import (
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"berth/agent"
	"berth/agent/eviction"
	"berth/agent/node"
	"berth/internal/errdefs"
)

// Group, version and kind of the file.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// File is a KubeletConfiguration read from a file, with the fields it sets.
type File struct {
	Path   string
	Config kubeletv1beta1.KubeletConfiguration
	set    map[string]bool // dotted JSON paths present in the file
}

// Load reads and strictly decodes path (YAML or JSON).
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes data, read from path.
func Parse(path string, data []byte) (*File, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--config %s: %s: %w", path, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	f := &File{Path: path, set: map[string]bool{}}
	if err := yaml.UnmarshalStrict(data, &f.Config); err != nil {
		return nil, bad("strict decoding error: %v", err)
	}
	if f.Config.APIVersion != APIVersion || f.Config.Kind != Kind {
		return nil, bad("apiVersion %q, kind %q: want %s, %s", f.Config.APIVersion, f.Config.Kind, APIVersion, Kind)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, bad("%v", err)
	}
	walk("", raw, f.set)
	return f, nil
}

// walk records the dotted paths of m's keys, and of nested objects'.
func walk(prefix string, m map[string]any, out map[string]bool) {
	for k, v := range m {
		out[prefix+k] = true
		if sub, ok := v.(map[string]any); ok && !mapField[prefix+k] {
			walk(prefix+k+".", sub, out)
		}
	}
}

// mapField are the fields that are maps of user keys, not objects.
var mapField = map[string]bool{
	"evictionHard": true, "evictionSoft": true, "evictionSoftGracePeriod": true, "evictionMinimumReclaim": true,
	"systemReserved": true, "kubeReserved": true, "featureGates": true, "qosReserved": true, "systemReservedCgroup": true,
}

// field is one supported field: its JSON path, the flag overriding it,
// and how it is applied.
type field struct {
	path, flag string
	apply      func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error
}

var fields = []field{
	{"staticPodPath", "pod-manifest-path", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.PodManifestPath = c.StaticPodPath
		return nil
	}},
	{"containerRuntimeEndpoint", "container-runtime-endpoint", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.RuntimeEndpoint = c.ContainerRuntimeEndpoint
		return nil
	}},
	{"address", "kubelet-address", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if net.ParseIP(c.Address) == nil {
			return fmt.Errorf("%q is not an IP address", c.Address)
		}
		cfg.KubeletAddress = c.Address
		return nil
	}},
	{"port", "kubelet-port", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.KubeletPort = int(c.Port)
		return nil
	}},
	{"readOnlyPort", "read-only-port", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.ReadOnlyPort = int(c.ReadOnlyPort)
		return nil
	}},
	{"tlsCertFile", "tls-cert-file", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.TLSCertFile = c.TLSCertFile
		return nil
	}},
	{"tlsPrivateKeyFile", "tls-private-key-file", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.TLSKeyFile = c.TLSPrivateKeyFile
		return nil
	}},
	{"authentication.x509.clientCAFile", "client-ca-file", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.ClientCAFile = c.Authentication.X509.ClientCAFile
		return nil
	}},
	{"authentication.anonymous.enabled", "", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if e := c.Authentication.Anonymous.Enabled; e != nil && *e {
			return fmt.Errorf("true is not supported: the agent API never serves anonymous requests")
		}
		return nil
	}},
	{"authentication.webhook.enabled", "", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if e := c.Authentication.Webhook.Enabled; e != nil && !*e {
			return fmt.Errorf("false is not supported: the agent API authenticates bearer tokens with the apiserver's TokenReview")
		}
		return nil
	}},
	{"authorization.mode", "", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if c.Authorization.Mode != kubeletv1beta1.KubeletAuthorizationModeWebhook {
			return fmt.Errorf("%q is not supported: the agent API authorizes with the apiserver's SubjectAccessReview (Webhook)", c.Authorization.Mode)
		}
		return nil
	}},
	{"clusterDNS", "cluster-dns", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.ClusterDNS = nil
		for _, s := range c.ClusterDNS {
			ip := net.ParseIP(s)
			if ip == nil {
				return fmt.Errorf("%q is not an IP address", s)
			}
			cfg.ClusterDNS = append(cfg.ClusterDNS, ip)
		}
		return nil
	}},
	{"clusterDomain", "cluster-domain", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.ClusterDomain = c.ClusterDomain
		return nil
	}},
	{"resolvConf", "resolv-conf", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if c.ResolverConfig != nil {
			cfg.ResolvConf = *c.ResolverConfig
		}
		return nil
	}},
	{"podCIDR", "pod-cidr", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.PodCIDR = c.PodCIDR
		return nil
	}},
	{"cgroupRoot", "cgroup-root", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.CgroupRoot = c.CgroupRoot
		return nil
	}},
	{"allowedUnsafeSysctls", "allowed-unsafe-sysctls", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.AllowedUnsafeSysctls = c.AllowedUnsafeSysctls
		return nil
	}},
	{"evictionHard", "eviction-hard", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.EvictionHard, err = node.ParseThresholds(statements(c.EvictionHard, "<"))
		return err
	}},
	{"evictionSoft", "eviction-soft", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.EvictionSoft, err = node.ParseThresholds(statements(c.EvictionSoft, "<"))
		return err
	}},
	{"evictionSoftGracePeriod", "eviction-soft-grace-period", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.EvictionSoftGracePeriod, err = eviction.ParseGracePeriods(statements(c.EvictionSoftGracePeriod, "="))
		return err
	}},
	{"evictionMinimumReclaim", "eviction-minimum-reclaim", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.EvictionMinimumReclaim, err = eviction.ParseMinimumReclaims(statements(c.EvictionMinimumReclaim, "="))
		return err
	}},
	{"evictionMaxPodGracePeriod", "eviction-max-pod-grace-period", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.EvictionMaxPodGracePeriod = time.Duration(c.EvictionMaxPodGracePeriod) * time.Second
		return nil
	}},
	{"evictionPressureTransitionPeriod", "eviction-pressure-transition-period", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.EvictionPressureTransitionPeriod = c.EvictionPressureTransitionPeriod.Duration
		return nil
	}},
	{"imageGCHighThresholdPercent", "image-gc-high-threshold", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if p := c.ImageGCHighThresholdPercent; p != nil {
			cfg.ImageGCPolicy.HighThresholdPercent = int(*p)
		}
		return nil
	}},
	{"imageGCLowThresholdPercent", "image-gc-low-threshold", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		if p := c.ImageGCLowThresholdPercent; p != nil {
			cfg.ImageGCPolicy.LowThresholdPercent = int(*p)
		}
		return nil
	}},
	{"imageMinimumGCAge", "minimum-image-ttl-duration", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.ImageGCPolicy.MinAge = c.ImageMinimumGCAge.Duration
		return nil
	}},
	{"maxPods", "max-pods", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.MaxPods = int64(c.MaxPods)
		return nil
	}},
	{"systemReserved", "system-reserved", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.SystemReserved, err = ResourceList(c.SystemReserved)
		return err
	}},
	{"kubeReserved", "kube-reserved", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) (err error) {
		cfg.KubeReserved, err = ResourceList(c.KubeReserved)
		return err
	}},
	{"registerWithTaints", "register-with-taints", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.RegisterWithTaints = c.RegisterWithTaints
		return nil
	}},
	{"nodeStatusUpdateFrequency", "node-status-update-frequency", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.NodeStatusUpdateFrequency = c.NodeStatusUpdateFrequency.Duration
		return nil
	}},
	{"nodeStatusReportFrequency", "", func(c *kubeletv1beta1.KubeletConfiguration, cfg *agent.Config) error {
		cfg.NodeStatusReportFrequency = c.NodeStatusReportFrequency.Duration
		return nil
	}},
}

// accepted are fields whose value is berth's behaviour already (or that
// only describe the file): applied as they are, with no warning.
var accepted = map[string]func(c *kubeletv1beta1.KubeletConfiguration) bool{
	"apiVersion":               func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"kind":                     func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"authentication":           func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"authentication.x509":      func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"authentication.webhook":   func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"authentication.anonymous": func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	"authorization":            func(*kubeletv1beta1.KubeletConfiguration) bool { return true },
	// berth pulls in parallel, as serializeImagePulls: false.
	"serializeImagePulls": func(c *kubeletv1beta1.KubeletConfiguration) bool {
		return c.SerializeImagePulls != nil && !*c.SerializeImagePulls
	},
	// berth's cgroups are cgroupfs-driven, and it runs on cgroup v1.
	"cgroupDriver": func(c *kubeletv1beta1.KubeletConfiguration) bool { return c.CgroupDriver == "cgroupfs" },
	"failCgroupV1": func(c *kubeletv1beta1.KubeletConfiguration) bool { return c.FailCgroupV1 != nil && !*c.FailCgroupV1 },
}

// Apply sets cfg from the file's supported fields, except those whose flag
// explicit reports given on the command line (nil: none). It returns a
// warning for each field the file sets that berth ignores, and an error
// naming the first field it cannot apply.
func (f *File) Apply(cfg *agent.Config, explicit func(flag string) bool) ([]string, error) {
	known := map[string]bool{}
	for _, fl := range fields {
		known[fl.path] = true
		if !f.set[fl.path] || (fl.flag != "" && explicit != nil && explicit(fl.flag)) {
			continue
		}
		if err := fl.apply(&f.Config, cfg); err != nil {
			return nil, fmt.Errorf("--config %s: %s: %w: %w", f.Path, fl.path, err, errdefs.ErrInvalidArgument)
		}
	}
	var warnings []string
	paths := make([]string, 0, len(f.set))
	for p := range f.set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if known[p] || (accepted[p] != nil && accepted[p](&f.Config)) || slices.ContainsFunc(paths, func(q string) bool { return strings.HasPrefix(q, p+".") }) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("--config %s: %s is not supported by berth agent and is ignored", f.Path, p))
	}
	return warnings, nil
}

// statements renders a map of signal to value as the flags' syntax
// ("memory.available<100Mi,..."), sorted.
func statements(m map[string]string, op string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+op+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// ResourceList reads reserved resources ("cpu": "100m", "memory": "1Gi");
// errors name the resource.
func ResourceList(m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := v1.ResourceList{}
	for k, v := range m {
		switch r := v1.ResourceName(k); r {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "pid":
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() < 0 {
				return nil, fmt.Errorf("%s=%s: must be a non-negative quantity", k, v)
			}
			out[r] = q
		default:
			return nil, fmt.Errorf("cannot reserve %q resource", k)
		}
	}
	return out, nil
}
