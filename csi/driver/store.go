package driver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Volume kinds.
const (
	kindDirectory = "directory"
	kindExt4File  = "ext4-file"
)

// volumeIDRE is the form of the IDs csi-local hands out. Anything else names
// no volume of ours (and is never used to build a path).
var volumeIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// volume is the persisted record of one volume.
type volume struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Kind          string            `json:"kind"`
	CapacityBytes int64             `json:"capacityBytes"`
	FSType        string            `json:"fsType,omitempty"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	Created       time.Time         `json:"created"`
	// Ephemeral marks a CSI ephemeral inline volume: created by
	// NodePublishVolume, named by the CO's volume handle, deleted by its last
	// NodeUnpublishVolume, and invisible to the controller service.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// StagingPath is where the volume is staged, "" when it is not.
	StagingPath string `json:"stagingPath,omitempty"`
	// Published maps each target path to whether it is read-only.
	Published map[string]bool `json:"published,omitempty"`
}

// store keeps the volume records in memory and one JSON file per volume in
// <root>/state. Callers hold Driver.mu.
type store struct {
	root    string
	volumes map[string]*volume
}

func openStore(root string) (*store, error) {
	s := &store{root: root, volumes: map[string]*volume{}}
	for _, dir := range []string{s.stateDir(), s.dataDir()} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("csi-local: create %s: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(s.stateDir())
	if err != nil {
		return nil, fmt.Errorf("csi-local: read state: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !volumeIDRE.MatchString(id) {
			continue // a temp file from an interrupted write, or not ours
		}
		data, err := os.ReadFile(filepath.Join(s.stateDir(), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("csi-local: read volume %s: %w", id, err)
		}
		v := &volume{}
		if err := json.Unmarshal(data, v); err != nil {
			return nil, fmt.Errorf("csi-local: volume %s: corrupt metadata: %w", id, err)
		}
		if v.ID != id {
			return nil, fmt.Errorf("csi-local: volume file %s holds volume %q", e.Name(), v.ID)
		}
		s.volumes[id] = v
	}
	return s, nil
}

func (s *store) stateDir() string { return filepath.Join(s.root, "state") }
func (s *store) dataDir() string  { return filepath.Join(s.root, "volumes") }

// dataPath is the volume's directory (directory kind) or image file (ext4-file kind).
func (s *store) dataPath(v *volume) string {
	if v.Kind == kindExt4File {
		return filepath.Join(s.dataDir(), v.ID+".img")
	}
	return filepath.Join(s.dataDir(), v.ID)
}

// get returns the persistent (controller-created) volume with that ID.
func (s *store) get(id string) (*volume, bool) {
	if !volumeIDRE.MatchString(id) {
		return nil, false
	}
	v, ok := s.volumes[id]
	if !ok || v.Ephemeral {
		return nil, false
	}
	return v, true
}

// getEphemeral returns the ephemeral inline volume the CO calls handle.
func (s *store) getEphemeral(handle string) (*volume, bool) {
	v, ok := s.volumes[ephemeralID(handle)]
	if !ok || !v.Ephemeral || v.Name != handle {
		return nil, false
	}
	return v, true
}

// published returns the volume a node call names: a persistent volume by
// its ID, or an ephemeral inline volume by the CO's handle.
func (s *store) published(id string) (*volume, bool) {
	if v, ok := s.get(id); ok {
		return v, true
	}
	return s.getEphemeral(id)
}

// ephemeralID is the internal ID of the ephemeral volume the CO calls handle.
func ephemeralID(handle string) string {
	sum := sha256.Sum256([]byte("ephemeral\x00" + handle))
	return hex.EncodeToString(sum[:16])
}

func (s *store) byName(name string) (*volume, bool) {
	for _, v := range s.volumes {
		if v.Name == name && !v.Ephemeral {
			return v, true
		}
	}
	return nil, false
}

// sorted returns the persistent volumes ordered by ID (the ListVolumes order).
func (s *store) sorted() []*volume {
	out := make([]*volume, 0, len(s.volumes))
	for _, v := range s.volumes {
		if !v.Ephemeral {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// save writes the volume's record atomically (temp file, fsync, rename).
func (s *store) save(v *volume) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	final := filepath.Join(s.stateDir(), v.ID+".json")
	tmp, err := os.CreateTemp(s.stateDir(), ".tmp-"+v.ID+"-")
	if err != nil {
		return fmt.Errorf("save volume %s: %w", v.ID, err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save volume %s: %w", v.ID, err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save volume %s: %w", v.ID, err)
	}
	s.volumes[v.ID] = v
	return nil
}

// remove deletes the volume's record.
func (s *store) remove(id string) error {
	if err := os.Remove(filepath.Join(s.stateDir(), id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove volume %s metadata: %w", id, err)
	}
	delete(s.volumes, id)
	return nil
}

func newVolumeID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}
