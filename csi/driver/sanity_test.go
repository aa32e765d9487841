package driver_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"

	"berth/csi/driver"
	"berth/csi/internal/csitest"
)

// TestSanity runs the community's csi-sanity suite against csi-local twice in
// one Ginkgo run: once as the suite asks (mount capabilities without a
// filesystem type: directory volumes), and once with every mount capability
// asking for ext4, so each volume with a capacity is a formatted,
// loop-mounted image.
func TestSanity(t *testing.T) {
	csitest.RequireMounts(t)
	dir := t.TempDir()
	csitest.CheckNoMounts(t, dir)

	dirDriver := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "dir-root"), NodeID: "sanity-node"})
	ext4Driver := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "ext4-root"), NodeID: "sanity-node"})

	dirCfg := sanity.NewTestConfig()
	dirCfg.Address = "unix://" + dirDriver.Endpoint()
	dirCfg.TargetPath = filepath.Join(dir, "dir-target")
	dirCfg.StagingPath = filepath.Join(dir, "dir-staging")

	ext4Cfg := sanity.NewTestConfig()
	ext4Cfg.Address = "unix://" + ext4Driver.Endpoint()
	ext4Cfg.TargetPath = filepath.Join(dir, "ext4-target")
	ext4Cfg.StagingPath = filepath.Join(dir, "ext4-staging")
	ext4Cfg.TestVolumeSize = 64 << 20
	ext4Cfg.TestVolumeExpandSize = 128 << 20
	ext4Cfg.IdempotentCount = 3
	ext4Cfg.DialOptions = append(ext4Cfg.DialOptions, grpc.WithUnaryInterceptor(askForExt4))

	var contexts []*sanity.TestContext
	Describe("directory volumes", func() { contexts = append(contexts, sanity.GinkgoTest(&dirCfg)) })
	Describe("ext4 volumes", func() { contexts = append(contexts, sanity.GinkgoTest(&ext4Cfg)) })
	RegisterFailHandler(Fail)
	suiteCfg, reporterCfg := GinkgoConfiguration()
	reporterCfg.Succinct = !testing.Verbose()
	reporterCfg.NoColor = true
	RunSpecs(t, "csi-local sanity", suiteCfg, reporterCfg)
	for _, sc := range contexts {
		sc.Finalize()
	}
}

// askForExt4 sets fsType ext4 on every mount capability the suite sends.
func askForExt4(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var caps []*csi.VolumeCapability
	switch r := req.(type) {
	case *csi.CreateVolumeRequest:
		caps = r.GetVolumeCapabilities()
	case *csi.ValidateVolumeCapabilitiesRequest:
		caps = r.GetVolumeCapabilities()
	case *csi.GetCapacityRequest:
		caps = r.GetVolumeCapabilities()
	case *csi.NodeStageVolumeRequest:
		caps = []*csi.VolumeCapability{r.GetVolumeCapability()}
	case *csi.NodePublishVolumeRequest:
		caps = []*csi.VolumeCapability{r.GetVolumeCapability()}
	}
	for _, c := range caps {
		if m := c.GetMount(); m != nil && m.FsType == "" {
			m.FsType = "ext4"
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}
