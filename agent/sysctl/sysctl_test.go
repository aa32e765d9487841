package sysctl

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSafe(t *testing.T) {
	if got := Safe("6.18.44-fc-v657"); len(got) != len(safe) {
		t.Errorf("Safe on 6.18 = %v, want all %d", got, len(safe))
	}
	old := Safe("4.4.0-generic")
	if !slices.Contains(old, "net.ipv4.ip_local_reserved_ports") || slices.Contains(old, "net.ipv4.tcp_keepalive_time") || slices.Contains(old, "net.ipv4.tcp_rmem") {
		t.Errorf("Safe on 4.4 = %v: want ip_local_reserved_ports (3.16) but not tcp_keepalive_time (4.5) nor tcp_rmem (4.15)", old)
	}
	if got := Safe("garbage"); !slices.Equal(got, []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}) {
		t.Errorf("Safe on an unknown kernel = %v", got)
	}
}

func TestNewAllowlistRejectsBadPatterns(t *testing.T) {
	for _, p := range []string{"", "kernel.*.foo", "foo.bar", "net.*.*", "Kernel.msgmax", "vm.swappiness"} {
		if _, err := NewAllowlist([]string{p}); err == nil {
			t.Errorf("NewAllowlist(%q): no error", p)
		}
	}
	if _, err := NewAllowlist([]string{"kernel.msg*", "net.core.somaxconn", "kernel/shm_rmid_forced", "net.*"}); err != nil {
		t.Errorf("valid patterns: %v", err)
	}
}

func TestAdmit(t *testing.T) {
	a, err := NewAllowlist(append(Safe("6.1.0"), "kernel.msg*", "net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(hostNet, hostIPC bool, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		message string // empty: admitted
	}{
		{"no security context", &v1.Pod{}, ""},
		{"safe sysctls", pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"), ""},
		{"a safe sysctl with slashes", pod(false, false, "kernel/shm_rmid_forced"), ""},
		{"allowed unsafe by prefix and name", pod(false, false, "kernel.msgmax", "net.core.somaxconn"), ""},
		{"unsafe not allowed", pod(false, false, "kernel.shm_rmid_forced", "kernel.shmmax"), `forbidden sysctl: "kernel.shmmax" not allowlisted`},
		{"not namespaced", pod(false, false, "vm.swappiness"), `forbidden sysctl: "vm.swappiness" not allowlisted`},
		{"a net sysctl with the host network", pod(true, false, "net.ipv4.ip_local_port_range"), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{"an IPC sysctl with host IPC", pod(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"an IPC sysctl with the host network", pod(true, false, "kernel.shm_rmid_forced"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, ok := a.Admit(tc.pod)
			if tc.message == "" {
				if !ok {
					t.Fatalf("rejected: %s %s", reason, msg)
				}
				return
			}
			if ok || reason != ReasonForbidden || msg != tc.message {
				t.Fatalf("Admit = %q %q %v, want SysctlForbidden %q", reason, msg, ok, tc.message)
			}
		})
	}
}
