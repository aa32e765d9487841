package manager

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Client rate limits ClientsFor applies when the rest.Config has none
// (client-go's own default of 5 QPS would throttle a 1000-pod ReplicaSet
// to minutes).
const (
	DefaultQPS   = 200
	DefaultBurst = 400
)

// ClientsFor builds the typed and dynamic clients Config needs from rc (a
// copy, with DefaultQPS/DefaultBurst when rc sets no limits) and names the
// manager in the User-Agent.
func ClientsFor(rc *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	cfg := rest.CopyConfig(rc)
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	cfg = rest.AddUserAgent(cfg, EventComponent)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager: client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager: dynamic client: %w", err)
	}
	return client, dyn, nil
}
