package testbed

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd starts an n-member etcd cluster on loopback in this process,
// its data under dir, and returns the members and their client URLs.
func startEtcd(dir string, n int) ([]*embed.Etcd, []string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	peers, clients := make([]url.URL, n), make([]url.URL, n)
	var initial []string
	for i := range n {
		pp, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		peers[i] = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pp)}
		clients[i] = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cp)}
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i].String()))
	}
	var members []*embed.Etcd
	stopAll := func() {
		for _, e := range members {
			e.Close()
		}
	}
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clients[i]}, []url.URL{clients[i]}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "berth-testbed"
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{filepath.Join(dir, cfg.Name+".log")}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("testbed: etcd member %d: %w", i, err)
		}
		members = append(members, e)
	}
	for i, e := range members {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			stopAll()
			return nil, nil, fmt.Errorf("testbed: etcd member %d not ready after 60s", i)
		}
	}
	var urls []string
	for _, c := range clients {
		urls = append(urls, c.String())
	}
	return members, urls, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
