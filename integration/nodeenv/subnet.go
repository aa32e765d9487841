package nodeenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"
)

// LockDir holds one lock file per pod subnet in use by an environment on
// this machine, shared by every test process.
const LockDir = "/run/berth-test"

// slot is the instance's claim on 10.222.N.0/24 and bridge "berthtestN": an
// exclusive flock on LockDir/subnet-N.lock, held for the environment's life
// (the kernel drops it if the process dies). The file records what the
// instance created, so a later instance that finds the lock free but the
// record present cleans up after a crashed run.
type slot struct {
	n      int
	file   *os.File
	cidr   string
	bridge string
}

// record is what a slot's lock file remembers about its instance.
type record struct {
	Dir           string `json:"dir"`
	Bridge        string `json:"bridge"`
	ContainerdPID int    `json:"containerdPID"`
	Socket        string `json:"socket"`
}

const subnetPrefix = "10.222."

// claimSlot takes the first free N in 1..254 whose subnet no route or
// address on this host overlaps.
func claimSlot() (*slot, error) {
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		return nil, fmt.Errorf("lock dir: %w", err)
	}
	for n := 1; n <= 254; n++ {
		cidr := fmt.Sprintf("%s%d.0/24", subnetPrefix, n)
		bridge := "berthtest" + strconv.Itoa(n)
		path := filepath.Join(LockDir, fmt.Sprintf("subnet-%d.lock", n))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // another live instance holds it
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		s := &slot{n: n, file: f, cidr: cidr, bridge: bridge}
		if err := s.cleanStale(); err != nil {
			s.release()
			return nil, fmt.Errorf("clean up after a crashed environment in slot %d: %w", n, err)
		}
		if used, err := subnetInUse(cidr, bridge); err != nil {
			s.release()
			return nil, err
		} else if used {
			s.release()
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("no free pod subnet in %s1.0/24 … %s254.0/24 (locks in %s)", subnetPrefix, subnetPrefix, LockDir)
}

// subnetInUse reports whether a route or address on the host overlaps cidr,
// or a link named bridge exists.
func subnetInUse(cidr, bridge string) (bool, error) {
	_, want, _ := net.ParseCIDR(cidr)
	overlaps := func(n *net.IPNet) bool {
		return n != nil && (n.Contains(want.IP) || want.Contains(n.IP))
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() != "0.0.0.0/0" && overlaps(r.Dst) {
			return true, nil
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return false, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if want.Contains(a.IP) {
			return true, nil
		}
	}
	if _, err := netlink.LinkByName(bridge); err == nil {
		return true, nil
	}
	return false, nil
}

// save writes the instance's record into the lock file.
func (s *slot) save(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := s.file.Truncate(0); err != nil {
		return err
	}
	if _, err := s.file.WriteAt(b, 0); err != nil {
		return err
	}
	return s.file.Sync()
}

// cleanStale undoes what a crashed instance recorded in this slot: its
// sandboxes, containerd and shims, mounts, netns, bridge and directory.
func (s *slot) cleanStale() error {
	b, err := os.ReadFile(s.file.Name())
	if err != nil || len(b) == 0 {
		return err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return s.file.Truncate(0) // unreadable: nothing we can act on
	}
	if err := recoverCrashed(r); err != nil {
		return err
	}
	return s.file.Truncate(0)
}

// release forgets the record and drops the lock.
func (s *slot) release() {
	_ = s.file.Truncate(0)
	_ = syscall.Flock(int(s.file.Fd()), syscall.LOCK_UN)
	_ = s.file.Close()
}
