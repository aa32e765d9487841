package nodeenv

import "berth/internal/containerd"

// TestRuntimeHandler is the instance's second runtime handler (runc, as the
// default one), for tests of RuntimeClasses.
const TestRuntimeHandler = "test-handler"

// writeContainerdConfig writes the instance's config.toml and hosts
// directory into Dir, as internal/containerd writes berth's production
// containerd's, and returns config.toml's path. Everything stays under Dir
// (root, state, socket, config.toml, certs.d); containerd reads the
// instance's CNI conf dir, runs the pause image as sandbox image, and
// reaches both registries over plain HTTP. The auth registry needs only its
// mirror entry: CRI passes the credentials with each pull.
// restrict_oom_score_adj is detected (RestrictOOMScoreAdj left nil).
func (e *Env) writeContainerdConfig() (string, error) {
	mirrors := map[string]containerd.Mirror{}
	for _, host := range []string{e.Registry, e.AuthRegistry} {
		mirrors[host] = containerd.Mirror{Endpoints: []string{"http://" + host}}
	}
	cfg := containerd.Config{
		Dir:          e.Dir,
		Socket:       e.socket,
		CNIConfDir:   e.CNIConfDir,
		CNIBinDir:    CNIBinDir,
		SandboxImage: e.PauseImage,
		Registries:   containerd.Registries{Mirrors: mirrors},
		// A second handler, for RuntimeClasses (upstream's e2e name).
		RuntimeHandlers: []string{TestRuntimeHandler},
	}
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	restrict, err := cfg.ResolveRestrictOOMScoreAdj()
	if err != nil {
		return "", err
	}
	if err := containerd.WriteFiles(cfg, restrict); err != nil {
		return "", err
	}
	return cfg.ConfigPath(), nil
}
