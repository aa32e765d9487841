package registration_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"berth/csi/driver"
	"berth/csi/internal/csitest"
	"berth/csi/registrar"
	"berth/csi/registration"
	"berth/internal/syncbuf"
	"berth/internal/testrun"
)

const waitFor = 20 * time.Second

// startRegistry runs a registry on dir until the test ends and returns it
// with the channel its events arrive on.
func startRegistry(t *testing.T, dir string) (*registration.Registry, <-chan registration.Event) {
	t.Helper()
	events := make(chan registration.Event, 16)
	r, err := registration.New(registration.Config{
		Dir:          dir,
		ResyncPeriod: 200 * time.Millisecond,
		RetryInitial: 100 * time.Millisecond,
		RetryMax:     time.Second,
		OnChange:     func(e registration.Event) { events <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	testrun.Start(t, r)
	return r, events
}

func nextEvent(t *testing.T, events <-chan registration.Event, want registration.EventType) registration.Event {
	t.Helper()
	select {
	case e := <-events:
		if e.Type != want {
			t.Fatalf("event %s for %q, want %s", e.Type, e.Driver.Name, want)
		}
		return e
	case <-time.After(waitFor):
		t.Fatalf("no %s event within %s", want, waitFor)
	}
	return registration.Event{}
}

// waitStatus waits until the registrar has been told something.
func waitStatus(t *testing.T, s *registrar.Server) registrar.Status {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		st, changed := s.Status()
		if st.Reported {
			return st
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the agent did not report a registration status within %s", waitFor)
		}
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// berthBinary is $BERTH_BIN, or ./cmd/berth built once into a temp dir.
func berthBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("BERTH_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "berth-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "berth")
		out, err := exec.Command("go", "build", "-o", builtBin, "berth/cmd/berth").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("build berth: %v", buildErr)
	}
	return builtBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// shortTempDir is a temp dir with a short path: unix socket paths are
// limited to 107 bytes, and t.TempDir's include the test's name.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csireg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestCSILocalProcessRegistersAndDeregisters(t *testing.T) {
	bin := berthBinary(t)
	dir := shortTempDir(t)
	regDir := filepath.Join(dir, "agent", registration.DirName)
	r, events := startRegistry(t, regDir)

	var stderr syncbuf.Buffer
	cmd := exec.Command(bin, "csi-local",
		"--endpoint", "unix://"+filepath.Join(dir, "plugin", "csi.sock"),
		"--root-dir", filepath.Join(dir, "plugin", "root"),
		"--node-id", "node-7",
		"--registration-dir", regDir,
		"--max-volumes-per-node", "12",
	)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // by PID; a no-op once it has exited
		<-exited
	})

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("csi-local stderr:\n%s", stderr.String())
		}
	})
	e := nextEvent(t, events, registration.Registered)
	d := e.Driver
	if d.Name != driver.DefaultDriverName || d.Endpoint != filepath.Join(dir, "plugin", "csi.sock") || d.HighestVersion != "1.0.0" {
		t.Errorf("registered %+v", d)
	}
	if d.SocketPath != filepath.Join(regDir, driver.DefaultDriverName+"-reg.sock") {
		t.Errorf("registration socket %s, want node-driver-registrar's <name>-reg.sock", d.SocketPath)
	}
	if d.NodeInfo.NodeID != "node-7" || d.NodeInfo.MaxVolumesPerNode != 12 || d.NodeInfo.AccessibleTopology[driver.TopologyKey(d.Name)] != "node-7" {
		t.Errorf("node info %+v", d.NodeInfo)
	}
	got, ok := r.Driver(driver.DefaultDriverName)
	if !ok {
		t.Fatal("driver not in the registry")
	}
	caps, err := got.Client.NodeGetCapabilities(context.Background())
	if err != nil || !caps.StageUnstage {
		t.Errorf("the registry's client: %+v, %v", caps, err)
	}
	// The driver heard back.
	deadline := time.Now().Add(waitFor)
	for !strings.Contains(stderr.String(), "registered with the agent") {
		if time.Now().After(deadline) {
			t.Fatalf("csi-local did not log a successful registration; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// SIGTERM: the driver removes its sockets and the agent deregisters it.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events, registration.Deregistered)
	if _, ok := r.Driver(driver.DefaultDriverName); ok || len(r.Drivers()) != 0 {
		t.Errorf("drivers after deregistration: %v", r.Drivers())
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("csi-local exit: %v; stderr:\n%s", err, stderr.String())
		}
		exited <- nil
	case <-time.After(waitFor):
		t.Fatal("csi-local did not exit on SIGTERM")
	}
}

func TestInProcessDriverReRegistersAfterRestart(t *testing.T) {
	dir := shortTempDir(t)
	regDir := filepath.Join(dir, registration.DirName)
	if err := os.MkdirAll(regDir, 0o750); err != nil {
		t.Fatal(err)
	}
	r, events := startRegistry(t, regDir)

	// Files the watcher must ignore: a hidden socket and a plain file.
	hidden, err := net.Listen("unix", filepath.Join(regDir, ".hidden.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer hidden.Close()
	if err := os.WriteFile(filepath.Join(regDir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := driver.Config{
		Endpoint:        "unix://" + filepath.Join(dir, "csi.sock"),
		RootDir:         filepath.Join(dir, "root"),
		NodeID:          "n1",
		RegistrationDir: regDir,
	}
	for life := 1; life <= 2; life++ {
		d, err := driver.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		nextEvent(t, events, registration.Registered)
		if st := waitStatus(t, d.Registration()); !st.Registered || st.Error != "" {
			t.Errorf("life %d: driver-side status %+v, want registered", life, st)
		}
		if n := len(r.Drivers()); n != 1 {
			t.Errorf("life %d: %d drivers registered, want 1", life, n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		nextEvent(t, events, registration.Deregistered)
	}
}

// plugin is a registration server reporting whatever the test says, for the
// cases csi-local never produces.
type plugin struct {
	registerapi.UnimplementedRegistrationServer
	info   *registerapi.PluginInfo
	status chan *registerapi.RegistrationStatus
}

func (p *plugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *plugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.status <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

func servePlugin(t *testing.T, socket string, info *registerapi.PluginInfo) *plugin {
	t.Helper()
	p := &plugin{info: info, status: make(chan *registerapi.RegistrationStatus, 16)}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, p)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return p
}

func (p *plugin) wantRefusal(t *testing.T, mention string) {
	t.Helper()
	select {
	case s := <-p.status:
		if s.GetPluginRegistered() || !strings.Contains(s.GetError(), mention) {
			t.Errorf("status %+v, want a refusal mentioning %q", s, mention)
		}
	case <-time.After(waitFor):
		t.Fatalf("no registration status within %s", waitFor)
	}
}

func TestRefusesInvalidPlugins(t *testing.T) {
	dir := shortTempDir(t)
	regDir := filepath.Join(dir, registration.DirName)
	if err := os.MkdirAll(regDir, 0o750); err != nil {
		t.Fatal(err)
	}
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "root"), NodeID: "n1"})
	r, events := startRegistry(t, regDir)

	devicePlugin := servePlugin(t, filepath.Join(regDir, "dp.sock"), &registerapi.PluginInfo{Type: registerapi.DevicePlugin, Name: "example.com/gpu", SupportedVersions: []string{"v1beta1"}})
	devicePlugin.wantRefusal(t, `type "DevicePlugin"`)

	oldCSI := servePlugin(t, filepath.Join(regDir, "old.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "old.example.com", Endpoint: d.Endpoint(), SupportedVersions: []string{"0.3.0"}})
	oldCSI.wantRefusal(t, "0.3.0")

	noDriver := servePlugin(t, filepath.Join(regDir, "nodriver.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "gone.example.com", Endpoint: filepath.Join(dir, "nobody.sock"), SupportedVersions: []string{"1.0.0"}})
	noDriver.wantRefusal(t, "NodeGetInfo")
	// Refused plugins are retried with back-off, and refused again.
	noDriver.wantRefusal(t, "NodeGetInfo")

	// A valid one registers; a second with the same name and version is refused.
	good := servePlugin(t, filepath.Join(regDir, "a.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: d.Name(), Endpoint: d.Endpoint(), SupportedVersions: []string{"1.0.0"}})
	select {
	case s := <-good.status:
		if !s.GetPluginRegistered() {
			t.Fatalf("valid plugin refused: %s", s.GetError())
		}
	case <-time.After(waitFor):
		t.Fatal("valid plugin not told its status")
	}
	nextEvent(t, events, registration.Registered)
	dup := servePlugin(t, filepath.Join(regDir, "b.sock"), &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: d.Name(), Endpoint: d.Endpoint(), SupportedVersions: []string{"1.0.0"}})
	dup.wantRefusal(t, "already registered")

	if names := r.Drivers(); len(names) != 1 || names[0].Name != d.Name() || names[0].SocketPath != filepath.Join(regDir, "a.sock") {
		t.Errorf("registry holds %+v, want only %s through a.sock", names, d.Name())
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []registration.Config{
		{},
		{Dir: "relative"},
		{Dir: "/abs", ResyncPeriod: -1},
		{Dir: "/abs", RetryInitial: time.Minute, RetryMax: time.Second},
	} {
		if _, err := registration.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted an invalid config", cfg)
		}
	}
}

// TestScannedHoldsTheDriversPresentAtStart: a driver whose socket is there
// before the registry starts is registered by the time Scanned is closed,
// and CSIClient finds its node client.
func TestScannedHoldsTheDriversPresentAtStart(t *testing.T) {
	dir := shortTempDir(t)
	regDir := filepath.Join(dir, registration.DirName)
	d := csitest.StartDriver(t, driver.Config{RootDir: filepath.Join(dir, "root"), NodeID: "n1", RegistrationDir: regDir})
	csitest.WaitForSocket(t, d.Registration().SocketPath())
	r, _ := startRegistry(t, regDir)
	select {
	case <-r.Scanned():
	case <-time.After(waitFor):
		t.Fatal("Scanned not closed")
	}
	c, ok := r.CSIClient(d.Name())
	if !ok || c.Driver() != d.Name() {
		t.Fatalf("CSIClient(%s) = %v, %v after the first scan", d.Name(), c, ok)
	}
	if _, ok := r.CSIClient("other.example.com"); ok {
		t.Error("CSIClient found an unregistered driver")
	}
}
