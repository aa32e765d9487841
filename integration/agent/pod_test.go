package agent_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/cri"
	"berth/cri/crilog"
)

// A pod runs in a sandbox on the agent's bridge, gets an IP from the pod
// CIDR, shows up in GET /pods as Running and Ready with the kubelet's
// conditions, logs in the kubelet's layout, and a changed manifest replaces
// it; removing the manifest removes everything, cgroups included.
func TestPodRunsWithIPLogsAndLabels(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("web.yaml", podManifest(n.env, "web", "", "app=echo hello-from-berth; "+sleeper))

	p := n.waitPod("web-n1", "Running and Ready", time.Minute, func(p *v1.Pod) bool {
		return running(p) && condition(p, v1.PodReady) == v1.ConditionTrue
	})
	for _, c := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady} {
		if condition(p, c) != v1.ConditionTrue {
			t.Errorf("condition %s = %q", c, condition(p, c))
		}
	}
	cidr := netip.MustParsePrefix(n.env.PodCIDR)
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !cidr.Contains(ip) {
		t.Fatalf("podIP %q not in the pod CIDR %s", p.Status.PodIP, cidr)
	}
	if p.Status.HostIP != "127.0.0.1" || p.Status.StartTime == nil || p.Status.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("hostIP %q startTime %v qosClass %q", p.Status.HostIP, p.Status.StartTime, p.Status.QOSClass)
	}
	uid := string(p.UID)
	sbs := n.sandboxes(uid)
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes for the pod", len(sbs))
	}
	if l := sbs[0].GetLabels(); l[cri.LabelPodName] != "web-n1" || l[cri.LabelPodNamespace] != "default" {
		t.Errorf("sandbox labels %v", l)
	}
	st, err := n.cri.PodSandboxStatus(context.Background(), sbs[0].GetId(), false)
	if err != nil || st.GetStatus().GetNetwork().GetIp() != p.Status.PodIP {
		t.Errorf("CRI sandbox IP %q, status podIP %q (%v)", st.GetStatus().GetNetwork().GetIp(), p.Status.PodIP, err)
	}
	cs := containerStatus(p, "app")
	if !strings.HasPrefix(cs.ContainerID, "containerd://") || cs.ImageID == "" || cs.RestartCount != 0 || !cs.Ready {
		t.Errorf("container status %+v", cs)
	}

	logFile := filepath.Join(n.logs, "default_web-n1_"+uid, "app", "0.log")
	eventually(t, 30*time.Second, "the container's log line", func() (bool, string) {
		b, err := os.ReadFile(logFile)
		if err != nil {
			return false, err.Error()
		}
		line, err := crilog.ParseLine([]byte(strings.SplitN(string(b), "\n", 2)[0]))
		return err == nil && string(line.Content) == "hello-from-berth" && !line.Partial, string(b)
	})
	if len(n.podCgroups(uid)) == 0 {
		t.Errorf("no pod cgroup under %s/kubepods/besteffort", n.cgroupRoot)
	}

	// A changed manifest replaces the pod: new UID, old one gone.
	n.write("web.yaml", podManifest(n.env, "web", "", "app=echo second; "+sleeper))
	p2 := n.waitPod("web-n1", "replaced and Running", time.Minute, func(p *v1.Pod) bool { return string(p.UID) != uid && running(p) })
	eventually(t, time.Minute, "the old pod removed", func() (bool, string) {
		return len(n.sandboxes(uid)) == 0 && len(n.containers(uid)) == 0, ""
	})
	// The agent removes logs and cgroups after the runtime's objects.
	eventually(t, 30*time.Second, "the old pod's log directory and cgroups removed", func() (bool, string) {
		_, err := os.Stat(filepath.Dir(filepath.Dir(logFile)))
		left := n.podCgroups(uid)
		return os.IsNotExist(err) && len(left) == 0, fmt.Sprintf("log dir: %v, cgroups: %v", err, left)
	})
	n.removeAllAndWait()
	eventually(t, 30*time.Second, "the pod gone from GET /pods, its cgroups removed", func() (bool, string) {
		pods, err := n.pods()
		left := n.podCgroups(string(p2.UID))
		return err == nil && len(pods) == 0 && len(left) == 0, fmt.Sprintf("%d pods, cgroups %v", len(pods), left)
	})
}

// A hostNetwork pod runs in the node's network namespace and shows the
// node's IP as its own.
func TestHostNetworkPod(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("host.yaml", podManifest(n.env, "host", "  hostNetwork: true\n", "app="+sleeper))
	p := n.waitPod("host-n1", "Running", time.Minute, running)
	if p.Status.PodIP != "127.0.0.1" || p.Status.HostIP != "127.0.0.1" {
		t.Errorf("podIP %q hostIP %q, want the node's IP", p.Status.PodIP, p.Status.HostIP)
	}
	sbs := n.sandboxes(string(p.UID))
	st, err := n.cri.PodSandboxStatus(context.Background(), sbs[0].GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.GetStatus().GetLinux().GetNamespaces().GetOptions().GetNetwork(); mode.String() != "NODE" {
		t.Errorf("sandbox network namespace mode %s, want NODE", mode)
	}
	n.removeAllAndWait()
}

// The termination message a container writes to its terminationMessagePath
// is reported; FallbackToLogsOnError reports the log's tail when the file is
// empty and the container failed.
func TestTerminationMessages(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("file.yaml", podManifest(n.env, "file", "  restartPolicy: Never\n", "app=printf 'written to the file' > /dev/termination-log; exit 4"))
	logs := podManifest(n.env, "logs", "  restartPolicy: Never\n", "app=echo first line; echo last words; exit 5")
	logs += "    terminationMessagePolicy: FallbackToLogsOnError\n"
	n.write("logs.yaml", logs)
	p := n.waitPod("file-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if term := containerStatus(p, "app").State.Terminated; term == nil || term.Message != "written to the file" || term.ExitCode != 4 {
		t.Errorf("file message: %+v", containerStatus(p, "app").State)
	}
	p = n.waitPod("logs-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if term := containerStatus(p, "app").State.Terminated; term == nil || !strings.Contains(term.Message, "last words") || term.ExitCode != 5 {
		t.Errorf("log fallback message: %+v", containerStatus(p, "app").State)
	}
	n.removeAllAndWait()
}
