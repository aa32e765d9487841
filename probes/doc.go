// Package probes runs the kubelet's container probes and lifecycle hooks.
//
// The actions (exec through CRI ExecSync, httpGet, tcpSocket, grpc) are shared
// by probes and hooks, one file each, and follow the kubelet's semantics:
// results, messages, port resolution, headers, redirects and timeouts.
//
// Manager runs every liveness, readiness and startup probe of the pods it is
// given from one scheduler (a timer heap on an injected clock) with a bound on
// probes in flight, applies initialDelaySeconds, periodSeconds,
// successThreshold and failureThreshold as the kubelet does, and publishes
// result changes on a channel the agent consumes. HookRunner runs postStart
// and preStop handlers (exec, httpGet, sleep) under a caller's context.
package probes
