package cni

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth/internal/errdefs"
)

// fakePlugin installs an executable named name in dir that speaks the CNI
// exec protocol's VERSION command, answering with the given versions. With
// no versions it fails the command with a CNI error object and exit status 1.
func fakePlugin(t *testing.T, dir, name string, versions ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var answer string
	if len(versions) == 0 {
		answer = `echo '{"cniVersion":"1.0.0","code":999,"msg":"plugin is broken"}'; exit 1`
	} else {
		answer = fmt.Sprintf(`echo '{"cniVersion":"%s","supportedVersions":["%s"]}'`,
			versions[len(versions)-1], strings.Join(versions, `","`))
	}
	script := fmt.Sprintf(`#!/bin/sh
cat >/dev/null
if [ "$CNI_COMMAND" != VERSION ]; then
  echo '{"cniVersion":"1.0.0","code":4,"msg":"unexpected command '"$CNI_COMMAND"'"}'; exit 1
fi
%s
`, answer)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func installAll(t *testing.T, dir string) {
	for _, p := range []string{"bridge", "host-local", "portmap"} {
		fakePlugin(t, dir, p, "0.3.1", "0.4.0", "1.0.0")
	}
	fakePlugin(t, dir, "loopback", "0.3.1", "1.0.0")
}

func TestCheckAcceptsCompleteBinDir(t *testing.T) {
	cfg := validConfig(t)
	installAll(t, cfg.BinDirs[0])
	if err := Check(context.Background(), cfg); err != nil {
		t.Fatalf("Check = %v", err)
	}
}

func TestCheckSearchesEveryBinDir(t *testing.T) {
	cfg := validConfig(t)
	second := filepath.Join(t.TempDir(), "more")
	cfg.BinDirs = append(cfg.BinDirs, second)
	fakePlugin(t, cfg.BinDirs[0], "bridge", "1.0.0")
	fakePlugin(t, cfg.BinDirs[0], "host-local", "1.0.0")
	fakePlugin(t, second, "portmap", "1.0.0")
	fakePlugin(t, second, "loopback", "0.3.1")
	if err := Check(context.Background(), cfg); err != nil {
		t.Fatalf("Check = %v", err)
	}
}

func TestCheckNamesMissingPlugin(t *testing.T) {
	cfg := validConfig(t)
	installAll(t, cfg.BinDirs[0])
	if err := os.Remove(filepath.Join(cfg.BinDirs[0], "portmap")); err != nil {
		t.Fatal(err)
	}
	err := Check(context.Background(), cfg)
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Check = %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), `plugin "portmap"`) || !strings.Contains(err.Error(), cfg.BinDirs[0]) {
		t.Errorf("error %q does not name the plugin and the directory", err)
	}
}

func TestCheckNamesUnsupportedVersion(t *testing.T) {
	cfg := validConfig(t)
	installAll(t, cfg.BinDirs[0])
	fakePlugin(t, cfg.BinDirs[0], "host-local", "0.3.0", "0.3.1", "0.4.0")
	err := Check(context.Background(), cfg)
	if !errors.Is(err, errdefs.ErrUnimplemented) {
		t.Fatalf("Check = %v, want ErrUnimplemented", err)
	}
	for _, want := range []string{`plugin "host-local"`, "does not support CNI version 1.0.0", "0.4.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestCheckLoopbackNeedsContainerdsVersion(t *testing.T) {
	cfg := validConfig(t)
	installAll(t, cfg.BinDirs[0])
	fakePlugin(t, cfg.BinDirs[0], "loopback", "1.0.0")
	err := Check(context.Background(), cfg)
	if !errors.Is(err, errdefs.ErrUnimplemented) || !strings.Contains(err.Error(), `plugin "loopback"`) ||
		!strings.Contains(err.Error(), LoopbackVersion) {
		t.Fatalf("Check = %v, want loopback lacking %s", err, LoopbackVersion)
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	cfg := validConfig(t)
	installAll(t, cfg.BinDirs[0])
	fakePlugin(t, cfg.BinDirs[0], "bridge") // fails VERSION
	if err := os.Remove(filepath.Join(cfg.BinDirs[0], "loopback")); err != nil {
		t.Fatal(err)
	}
	err := Check(context.Background(), cfg)
	if !errors.Is(err, errdefs.ErrUnavailable) || !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Check = %v, want both ErrUnavailable (bridge) and ErrNotFound (loopback)", err)
	}
	for _, want := range []string{`plugin "bridge"`, "plugin is broken", `plugin "loopback"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestCheckRejectsInvalidConfig(t *testing.T) {
	cfg := validConfig(t)
	cfg.PodCIDRs = nil
	if err := Check(context.Background(), cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("Check = %v, want ErrInvalidArgument", err)
	}
}
