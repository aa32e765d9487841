package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"berth/internal/errdefs"
)

func TestConfigValidate(t *testing.T) {
	client := kubernetes.New(nil)
	factory := informers.NewSharedInformerFactory(client, 0)
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no client", Config{Informers: factory}, "client is required"},
		{"no informers", Config{Client: client}, "informer factory is required"},
		{"percentage above 100", Config{Client: client, Informers: factory, PercentageOfNodesToScore: 101}, "percentageOfNodesToScore 101"},
		{"negative parallelism", Config{Client: client, Informers: factory, Parallelism: -1}, "parallelism -1"},
		{"max below initial back-off", Config{Client: client, Informers: factory, InitialBackoff: 5 * time.Second, MaxBackoff: time.Second}, "max back-off"},
		{"defaults", Config{Client: client, Informers: factory}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				c := tc.cfg
				if c.SchedulerName != "default-scheduler" || c.Parallelism != DefaultParallelism || c.InitialBackoff != time.Second ||
					c.MaxBackoff != 10*time.Second || c.Logger == nil || c.Clock == nil || c.Metrics == nil || c.Rand == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("got %v, want an invalid-argument error mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewTwiceOnOneRegistryReusesMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	client := kubernetes.New(nil)
	for i := range 2 {
		if _, err := New(Config{Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Metrics: reg}); err != nil {
			t.Fatalf("New #%d: %v", i+1, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "scheduler_pending_pods") {
		t.Errorf("gathered %s, want scheduler_pending_pods", got)
	}
}
