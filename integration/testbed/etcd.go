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

// StartEtcd starts an n-member etcd cluster on loopback in this process,
// its data under dir, and returns the members, their configurations (which
// restart them) and their client URLs; the caller closes the members.
func StartEtcd(dir string, n int) ([]*embed.Etcd, []*embed.Config, []string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	peers, clients := make([]url.URL, n), make([]url.URL, n)
	var initial []string
	for i := range n {
		pp, err := freePort()
		if err != nil {
			return nil, nil, nil, err
		}
		cp, err := freePort()
		if err != nil {
			return nil, nil, nil, err
		}
		peers[i] = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", pp)}
		clients[i] = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", cp)}
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i].String()))
	}
	var members []*embed.Etcd
	var cfgs []*embed.Config
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
		cfg.InitialClusterToken = "berth-test"
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{filepath.Join(dir, cfg.Name+".log")}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			stopAll()
			return nil, nil, nil, fmt.Errorf("testbed: etcd member %d: %w", i, err)
		}
		members, cfgs = append(members, e), append(cfgs, cfg)
	}
	for i, e := range members {
		if err := waitEtcdReady(e, 60*time.Second); err != nil {
			stopAll()
			return nil, nil, nil, fmt.Errorf("testbed: etcd member %d: %w", i, err)
		}
	}
	var urls []string
	for _, c := range clients {
		urls = append(urls, c.String())
	}
	return members, cfgs, urls, nil
}

func waitEtcdReady(e *embed.Etcd, timeout time.Duration) error {
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return err
	case <-time.After(timeout):
		return fmt.Errorf("not ready after %s", timeout)
	}
}

// EtcdLeader is the index of the etcd member that leads (-1: none known).
func (b *Bed) EtcdLeader() int {
	for i, e := range b.Etcd {
		if e != nil && e.Server.Leader() == e.Server.MemberID() {
			return i
		}
	}
	return -1
}

// LoseEtcdMember takes etcd member i away as a crash would: it stops at
// once, without handing its leadership over (the others elect a leader
// once their election timeout passes), its peer and client connections
// drop; its data dir stays.
func (b *Bed) LoseEtcdMember(i int) {
	e := b.Etcd[i]
	if e == nil {
		return
	}
	e.Server.HardStop()
	e.Close()
	b.Etcd[i] = nil
}

// RestartEtcdMember starts lost member i again on its data dir and waits
// until it has rejoined the cluster and serves.
func (b *Bed) RestartEtcdMember(i int) error {
	if b.Etcd[i] != nil {
		return fmt.Errorf("testbed: etcd member %d runs", i)
	}
	e, err := embed.StartEtcd(b.etcdCfg[i])
	if err != nil {
		return fmt.Errorf("testbed: restart etcd member %d: %w", i, err)
	}
	if err := waitEtcdReady(e, 60*time.Second); err != nil {
		e.Close()
		return fmt.Errorf("testbed: restart etcd member %d: %w", i, err)
	}
	b.Etcd[i] = e
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
