package stats

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/integration/harness"
)

const pods = `apiVersion: v1
kind: Pod
metadata: {name: burner, namespace: default}
spec:
  containers:
  - name: burn
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while :; do :; done"]
---
apiVersion: v1
kind: Pod
metadata: {name: idler, namespace: default}
spec:
  containers:
  - name: sleep
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
  - name: sidecar
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: hog, namespace: default}
spec:
  containers:
  - name: hog
    image: %[1]s
    imagePullPolicy: IfNotPresent
    # tail holds a line of 64 MiB (no newline) in memory, waiting for the
    # end of its input, which the sleep keeps open (else tail prints it and
    # exits, and the container restarts under a new ID).
    command: ["sh", "-c", "{ head -c 67108864 /dev/zero; sleep 3600; } | tail"]
`

// agentClient fetches paths of the agent's API with the admin's client
// certificate (the agent's serving certificate is not what is tested here,
// as `curl -k`).
func agentClient(t *testing.T, cfg *rest.Config, port int) func(path string) []byte {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.InsecureSkipVerify = true
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second}
	return func(path string) []byte {
		t.Helper()
		resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(port) + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v\n%s", path, resp.Status, err, body)
		}
		return body
	}
}

func parse(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	return fams
}

// value is the value of the series of family name with the given labels.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestResourceUsage(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{
		ServerArgs: []string{"--metric-resolution", "2s"},
		AgentArgs:  []string{"--housekeeping-interval", "1s"},
	})
	ctx := context.Background()
	c.MustKubectl(t, fmt.Sprintf(pods, c.Env.BusyboxImage), "apply", "-f", "-")
	// Deleted before the agent stops, so their volumes are unmounted.
	t.Cleanup(func() {
		c.MustKubectl(t, "", "delete", "pod", "burner", "idler", "hog", "--grace-period=1", "--wait=true", "--timeout=90s")
	})
	var running []v1.Pod
	harness.WaitFor(t, 90*time.Second, "burner and idler running", func() (bool, string) {
		list, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = running[:0]
		var phases []string
		for _, p := range list.Items {
			phases = append(phases, p.Name+"="+string(p.Status.Phase))
			if p.Status.Phase == v1.PodRunning && p.Spec.NodeName == c.Node {
				running = append(running, p)
			}
		}
		return len(running) == len(list.Items) && len(list.Items) >= 3, strings.Join(phases, " ")
	})
	get := agentClient(t, c.Config, c.KubeletPort)
	burn := map[string]string{"container": "burn", "pod": "burner", "namespace": "default"}

	t.Run("container_cpu_usage_seconds_total rises for a pod burning CPU", func(t *testing.T) {
		var first float64
		harness.WaitFor(t, 30*time.Second, "burner's CPU series", func() (bool, string) {
			v, ok := value(parse(t, get("/metrics/resource")), "container_cpu_usage_seconds_total", burn)
			first = v
			return ok && v > 0, fmt.Sprint(v)
		})
		harness.WaitFor(t, 30*time.Second, "burner's CPU time to rise", func() (bool, string) {
			v, _ := value(parse(t, get("/metrics/resource")), "container_cpu_usage_seconds_total", burn)
			return v >= first+0.5, fmt.Sprintf("%v, first %v", v, first)
		})
	})

	t.Run("a pod allocating memory shows its working set", func(t *testing.T) {
		hog := map[string]string{"container": "hog", "pod": "hog", "namespace": "default"}
		harness.WaitFor(t, 30*time.Second, "hog's working set over 60 MiB", func() (bool, string) {
			v, _ := value(parse(t, get("/metrics/resource")), "container_memory_working_set_bytes", hog)
			return v > 60<<20, fmt.Sprint(v)
		})
		pod, _ := value(parse(t, get("/metrics/resource")), "pod_memory_working_set_bytes", map[string]string{"pod": "hog", "namespace": "default"})
		rss, _ := value(parse(t, get("/metrics/cadvisor")), "container_memory_rss", hog)
		if pod < 60<<20 || rss < 60<<20 {
			t.Errorf("hog: pod working set %v, container RSS %v; want over 60 MiB", pod, rss)
		}
	})

	t.Run("/stats/summary decodes into the kubelet's types with every pod", func(t *testing.T) {
		var s statsapi.Summary
		harness.WaitFor(t, 30*time.Second, "every running pod in the summary", func() (bool, string) {
			s = statsapi.Summary{}
			dec := json.NewDecoder(bytes.NewReader(get("/stats/summary")))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("decoding /stats/summary: %v", err)
			}
			have := map[string]bool{}
			for _, p := range s.Pods {
				have[p.PodRef.Namespace+"/"+p.PodRef.Name+"/"+p.PodRef.UID] = true
			}
			var missing []string
			for _, p := range running {
				if k := p.Namespace + "/" + p.Name + "/" + string(p.UID); !have[k] {
					missing = append(missing, k)
				}
			}
			return len(missing) == 0, fmt.Sprintf("missing %v", missing)
		})
		if s.Node.NodeName != c.Node || s.Node.CPU == nil || s.Node.Memory == nil || s.Node.Fs == nil || s.Node.Runtime == nil || s.Node.Runtime.ImageFs == nil {
			t.Errorf("node stats %+v", s.Node)
		}
		for _, p := range s.Pods {
			if p.PodRef.Name != "idler" {
				continue
			}
			if len(p.Containers) != 2 || p.CPU == nil || p.Memory == nil || p.Network == nil || p.Network.Name != "eth0" ||
				p.EphemeralStorage == nil || p.ProcessStats == nil || *p.ProcessStats.ProcessCount < 2 {
				b, _ := json.MarshalIndent(p, "", " ")
				t.Errorf("idler's stats:\n%s", b)
			}
			for _, ctr := range p.Containers {
				if ctr.Memory == nil || ctr.Memory.WorkingSetBytes == nil || *ctr.Memory.WorkingSetBytes == 0 || ctr.Rootfs == nil || ctr.Logs == nil {
					b, _ := json.MarshalIndent(ctr, "", " ")
					t.Errorf("container %s:\n%s", ctr.Name, b)
				}
			}
		}
	})

	t.Run("/metrics/cadvisor has every running container", func(t *testing.T) {
		fams := parse(t, get("/metrics/cadvisor"))
		for _, p := range running {
			for _, st := range p.Status.ContainerStatuses {
				id := st.ContainerID[strings.Index(st.ContainerID, "://")+3:]
				labels := map[string]string{"name": id, "container": st.Name, "pod": p.Name, "namespace": p.Namespace}
				for _, name := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_memory_rss", "container_fs_usage_bytes"} {
					if _, ok := value(fams, name, labels); !ok {
						t.Errorf("%s: no series for %s/%s %s", name, p.Name, st.Name, id)
					}
				}
			}
		}
		if _, ok := value(fams, "container_network_receive_bytes_total", map[string]string{"pod": "burner", "interface": "eth0"}); !ok {
			t.Error("container_network_receive_bytes_total: no series for burner's eth0")
		}
	})

	t.Run("kubectl top shows live figures", func(t *testing.T) {
		harness.WaitFor(t, 60*time.Second, "kubectl top pod burner with CPU", func() (bool, string) {
			out, stderr, err := c.Kubectl(t, "", "top", "pod", "burner", "--no-headers")
			if err != nil {
				return false, stderr
			}
			// "burner   987m   0Mi"
			f := strings.Fields(out)
			return len(f) == 3 && strings.HasSuffix(f[1], "m") && f[1] != "0m", out
		})
		// Each container once it has two samples.
		harness.WaitFor(t, 30*time.Second, "kubectl top pods -A --containers with every container", func() (bool, string) {
			out, stderr, err := c.Kubectl(t, "", "top", "pods", "-A", "--containers")
			if err != nil {
				return false, stderr
			}
			have := map[string]bool{}
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) == 5 {
					have[f[1]+"/"+f[2]] = true // NAMESPACE POD NAME CPU MEMORY
				}
			}
			return have["burner/burn"] && have["idler/sleep"] && have["idler/sidecar"], out
		})
		// metrics.k8s.io is aggregated into view: a viewer of the namespace may top its pods.
		if _, stderr, err := c.Kubectl(t, "", "top", "pod", "burner", "--as", "alice"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Errorf("alice without a role: err %v, stderr %q, want forbidden", err, stderr)
		}
		c.MustKubectl(t, "", "create", "rolebinding", "alice-view", "--clusterrole", "view", "--user", "alice")
		harness.WaitFor(t, 30*time.Second, "alice, a viewer, to top burner", func() (bool, string) {
			out, stderr, err := c.Kubectl(t, "", "top", "pod", "burner", "--as", "alice", "--no-headers")
			return err == nil && strings.HasPrefix(out, "burner "), out + stderr
		})
		harness.WaitFor(t, 30*time.Second, "kubectl top nodes", func() (bool, string) {
			out, stderr, err := c.Kubectl(t, "", "top", "nodes", "--no-headers")
			return err == nil && strings.HasPrefix(out, c.Node+" "), out + stderr
		})
	})

	t.Run("a HorizontalPodAutoscaler scales a busy Deployment from its CPU metrics", func(t *testing.T) {
		// Each pod spins, throttled to 50m against a 20m request: about
		// 250% of its request, five times the 50% target.
		c.MustKubectl(t, fmt.Sprintf(spinner, c.Env.BusyboxImage), "apply", "-f", "-")
		t.Cleanup(func() {
			c.MustKubectl(t, "", "delete", "hpa,deployment", "spin", "--wait=true", "--timeout=90s")
			c.MustKubectl(t, "", "delete", "pod", "-l", "app=spin", "--grace-period=1", "--wait=true", "--timeout=90s")
		})
		c.MustKubectl(t, "", "autoscale", "deployment", "spin", "--min=1", "--max=3", "--cpu-percent=50")
		harness.WaitFor(t, 120*time.Second, "the deployment scaled to the HPA's maximum", func() (bool, string) {
			d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "spin", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Spec.Replicas != nil && *d.Spec.Replicas == 3, fmt.Sprint(*d.Spec.Replicas)
		})
		harness.WaitFor(t, 30*time.Second, "the HPA's status to show the scale and its cpu utilization above target", func() (bool, string) {
			h, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "spin", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			var util int32
			for _, m := range h.Status.CurrentMetrics {
				if m.Resource != nil && m.Resource.Name == v1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
					util = *m.Resource.Current.AverageUtilization
				}
			}
			return util > 50 && h.Status.DesiredReplicas == 3 && h.Status.LastScaleTime != nil, fmt.Sprintf("%+v", h.Status)
		})
		// The same object through autoscaling/v1, as kubectl get hpa shows it.
		v1hpa, err := c.Client.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "spin", metav1.GetOptions{})
		if err != nil || v1hpa.Spec.TargetCPUUtilizationPercentage == nil || *v1hpa.Spec.TargetCPUUtilizationPercentage != 50 || v1hpa.Status.CurrentCPUUtilizationPercentage == nil {
			t.Errorf("autoscaling/v1 view: %+v (%v)", v1hpa, err)
		}
		out := c.MustKubectl(t, "", "get", "hpa", "spin", "--no-headers")
		// NAME REFERENCE TARGETS("cpu: <current>/50%") MINPODS MAXPODS REPLICAS AGE
		if f := strings.Fields(out); len(f) < 8 || f[1] != "Deployment/spin" || f[2] != "cpu:" || !strings.HasSuffix(f[3], "/50%") || f[4] != "1" || f[5] != "3" {
			t.Errorf("kubectl get hpa: %q", out)
		}
	})
}

const spinner = `apiVersion: apps/v1
kind: Deployment
metadata: {name: spin, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: spin}}
  template:
    metadata: {labels: {app: spin}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: spin
        image: %[1]s
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "while :; do :; done"]
        resources:
          requests: {cpu: 20m}
          limits: {cpu: 50m}
`
