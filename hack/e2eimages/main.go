// Command e2eimages builds, offline, the container images upstream's e2e
// suite (e2e.test v1.34) runs, and serves them from a registry on 127.0.0.1
// under upstream's exact repository names until SIGTERM or SIGINT. It is a
// tool of `make conformance` (hack/conformance/run.sh), not part of berth.
//
// The images are stand-ins assembled with go-containerregistry from static
// binaries: agnhost and nonewprivs' nnp built from k8s.io/kubernetes'
// test/images (by hack/conformance/build.sh), Debian's busybox-static for
// the userland with hack/e2eimages/sh as /bin/sh (busybox ash, or Debian's
// bash-static when the environment holds names that are not shell
// identifiers: busybox 1.35's ash drops them, upstream's 1.37 keeps them,
// and the envFrom specs read them back), berth's pause for pause, and busybox httpd
// serving on port 80 in place of Apache httpd and nginx, Debian's dig,
// nslookup, host and getent (bind9-dnsutils, libc-bin) with their libraries
// for jessie-dnsutils and in agnhost. Names, tags,
// entrypoints, users and ports follow test/utils/image/manifest.go and the
// Dockerfiles under test/images.
//
// In -dir it writes registries.yaml (for `berth up --registries`: every
// registry the images name mirrored to this one), images.txt (the
// references served, one a line) and, last, ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"berth/internal/testimages"
)

// Upstream's registries (test/utils/image/manifest.go's initRegistry):
// PromoterE2eRegistry and GcRegistry.
const (
	e2eRepo    = "e2e-test-images/"
	upstream   = "registry.k8s.io"
	apacheRoot = "usr/local/apache2/htdocs"
	nginxRoot  = "usr/share/nginx/html"
)

// inputs are the static binaries the images are made of.
type inputs struct {
	agnhost, agnhostDir, nnp, pause, busybox, bash, sh string
	// tools are dynamically linked programs (Debian's) added to agnhost
	// with the libraries ldd names; dnsutils are those of jessie-dnsutils
	// (and agnhost's too: upstream's has Alpine's bind-tools).
	tools, dnsutils []string
	// netcat is OpenBSD's nc (Debian's netcat-openbsd), agnhost's nc.
	netcat string
	// sampleAPIServer (k8s.io/sample-apiserver) and etcd
	// (go.etcd.io/etcd/server/v3), static: the Aggregator spec's extension
	// apiserver and its etcd sidecar. Empty: those images are left out.
	sampleAPIServer, etcd string
}

func main() {
	var in inputs
	dir := flag.String("dir", "", "directory to write registries.yaml, images.txt and ready into (required)")
	flag.StringVar(&in.agnhost, "agnhost", "", "static agnhost binary (k8s.io/kubernetes/test/images/agnhost) (required)")
	flag.StringVar(&in.agnhostDir, "agnhost-src", "", "k8s.io/kubernetes/test/images/agnhost source dir, for porter's localhost.crt/key, and beside it nautilus/html and kitten/html (required)")
	flag.StringVar(&in.nnp, "nnp", "", "static nnp binary (k8s.io/kubernetes/test/images/nonewprivs) (required)")
	flag.StringVar(&in.pause, "pause", "", "berth's static pause binary (required)")
	flag.StringVar(&in.busybox, "busybox", "/bin/busybox", "static busybox (Debian's busybox-static)")
	flag.StringVar(&in.bash, "bash", "/bin/bash-static", "static bash (Debian's bash-static), the images' /bin/bash")
	flag.StringVar(&in.sh, "sh", "", "static hack/e2eimages/sh, the images' /bin/sh (required)")
	tools := flag.String("agnhost-tools", "/usr/bin/curl", "comma-separated dynamically linked programs added to agnhost with their libraries (upstream's has curl: the lifecycle-hook specs run it)")
	dnsutils := flag.String("dnsutils", "/usr/bin/dig,/usr/bin/nslookup,/usr/bin/host,/usr/bin/getent", "comma-separated dynamically linked programs (Debian's bind9-dnsutils and getent) of jessie-dnsutils, added to agnhost too: the DNS specs run dig in both")
	flag.StringVar(&in.sampleAPIServer, "sample-apiserver", "", "static k8s.io/sample-apiserver binary, the sample-apiserver image (optional)")
	flag.StringVar(&in.etcd, "etcd", "", "static etcd binary (go.etcd.io/etcd/server/v3), the etcd image (optional)")
	flag.StringVar(&in.netcat, "netcat", "/usr/bin/nc.openbsd", "OpenBSD's nc (Debian's netcat-openbsd), agnhost's /usr/bin/nc as in upstream's: the Service specs run nc -v -t/-u, which busybox's lacks")
	flag.Parse()
	if *tools != "" {
		in.tools = strings.Split(*tools, ",")
	}
	if *dnsutils != "" {
		in.dnsutils = strings.Split(*dnsutils, ",")
	}
	if err := run(*dir, in); err != nil {
		fmt.Fprintln(os.Stderr, "e2eimages:", err)
		os.Exit(1)
	}
}

func run(dir string, in inputs) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	for flagName, v := range map[string]string{"-agnhost": in.agnhost, "-agnhost-src": in.agnhostDir, "-nnp": in.nnp, "-pause": in.pause, "-sh": in.sh} {
		if v == "" {
			return fmt.Errorf("%s is required", flagName)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	images, err := build(in)
	if err != nil {
		return err
	}
	reg, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		return err
	}
	defer reg.Close()
	pushCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var refs []string
	for repoTag, img := range images {
		if _, err := reg.Push(pushCtx, repoTag, img); err != nil {
			return err
		}
		refs = append(refs, upstream+"/"+repoTag)
	}
	sort.Strings(refs)
	registries := fmt.Sprintf("mirrors:\n  %s:\n    endpoint: [\"http://%s\"]\n", upstream, reg.Host())
	if err := os.WriteFile(filepath.Join(dir, "registries.yaml"), []byte(registries), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "images.txt"), []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(reg.Host()+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("e2eimages: %s -> %s, %d images:\n  %s\n", upstream, reg.Host(), len(refs), strings.Join(refs, "\n  "))
	<-ctx.Done()
	return nil
}

// build assembles every image, keyed by its repository:tag under
// registry.k8s.io.
func build(in inputs) (map[string]v1.Image, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return b, testimages.RequireStatic(path, b)
	}
	agnhost, err := read(in.agnhost)
	if err != nil {
		return nil, err
	}
	nnp, err := read(in.nnp)
	if err != nil {
		return nil, err
	}
	pauseBin, err := read(in.pause)
	if err != nil {
		return nil, err
	}
	crt, err := os.ReadFile(filepath.Join(in.agnhostDir, "porter", "localhost.crt"))
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(filepath.Join(in.agnhostDir, "porter", "localhost.key"))
	if err != nil {
		return nil, err
	}
	shell, err := userland(in.busybox, in.bash, in.sh)
	if err != nil {
		return nil, err
	}
	with := func(extra ...testimages.File) []testimages.File {
		return append(append([]testimages.File(nil), shell...), extra...)
	}
	env := []string{"PATH=" + testimages.DefaultPath}
	// getent looks in /etc/hosts before DNS, as on Debian and Alpine
	// (glibc's default without nsswitch.conf asks only DNS when it answers).
	nsswitch := testimages.File{Name: "etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")}
	out := map[string]v1.Image{}
	add := func(repoTag string, files []testimages.File, cfg v1.Config) error {
		img, err := testimages.Image(files, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", repoTag, err)
		}
		out[repoTag] = img
		return nil
	}
	ports := func(ps ...int) map[string]struct{} {
		m := map[string]struct{}{}
		for _, p := range ps {
			m[fmt.Sprintf("%d/tcp", p)] = struct{}{}
		}
		return m
	}

	// pause:3.10.1 (GcRegistry): berth's own pause.
	pause, err := testimages.PauseImage(pauseBin)
	if err != nil {
		return nil, err
	}
	out["pause:3.10.1"] = pause

	// busybox:1.37.0-1: the userland, sh as its command.
	if err := add(e2eRepo+"busybox:1.37.0-1", with(), v1.Config{Cmd: []string{"sh"}, Env: env, WorkingDir: "/"}); err != nil {
		return nil, err
	}

	// agnhost:2.56 (test/images/agnhost/Dockerfile): /agnhost as the
	// entrypoint and pause as the command, /agnhost-2 for the
	// entrypoint-tester specs, /uploads for netexec, porter's certificate,
	// and the user and group the supplemental-groups spec expects in the
	// image (user-defined-in-image 1000 in group-defined-in-image 50000).
	agnhostFiles := with(
		testimages.File{Name: "agnhost", Mode: 0o755, Data: agnhost},
		testimages.File{Name: "agnhost-2", Link: "agnhost"},
		testimages.File{Name: "uploads", Mode: fs.ModeDir | 0o755},
		testimages.File{Name: "localhost.crt", Mode: 0o644, Data: crt},
		testimages.File{Name: "localhost.key", Mode: 0o644, Data: key},
	)
	agnhostFiles = withAccounts(agnhostFiles,
		"user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh\n",
		"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")
	tools, err := withLibraries(append(append([]string{in.netcat}, in.tools...), in.dnsutils...))
	if err != nil {
		return nil, err
	}
	agnhostFiles = append(append(agnhostFiles, tools...), nsswitch,
		testimages.File{Name: "usr/bin/nc", Link: in.netcat}) // before busybox's /bin/nc on PATH
	// bash (in POSIX mode) is agnhost's /bin/sh: Debian's busybox ash runs
	// its own applets before PATH, so `sh -c "nc -v …"` would get busybox's
	// nc, not OpenBSD's (Alpine's ash, upstream's, goes by PATH).
	for i, f := range agnhostFiles {
		if f.Name == "bin/sh" {
			agnhostFiles[i] = testimages.File{Name: "bin/sh", Link: "bash"}
		}
	}
	agnhostFiles = append(agnhostFiles,
		testimages.File{Name: "home", Mode: fs.ModeDir | 0o755},
		testimages.File{Name: "home/user-defined-in-image", Mode: fs.ModeDir | 0o755, UID: 1000, GID: 1000})
	if err := add(e2eRepo+"agnhost:2.56", agnhostFiles, v1.Config{
		Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: env, WorkingDir: "/",
		ExposedPorts: ports(80, 8080, 8081, 9376, 5000),
	}); err != nil {
		return nil, err
	}

	// nautilus:1.7 and kitten:1.7 (test/images/{nautilus,kitten}: agnhost
	// with the picture and data.json of its html directory at /, and
	// `test-webserver` serving / on port 80 as the command): the kubectl
	// Update Demo specs read data.json through the pod proxy.
	for _, name := range []string{"nautilus", "kitten"} {
		html := filepath.Join(filepath.Dir(in.agnhostDir), name, "html")
		picture, err := os.ReadFile(filepath.Join(html, name+".jpg"))
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(html, "data.json"))
		if err != nil {
			return nil, err
		}
		files := append(append([]testimages.File(nil), agnhostFiles...),
			testimages.File{Name: name + ".jpg", Mode: 0o644, Data: picture},
			testimages.File{Name: "data.json", Mode: 0o644, Data: data})
		if err := add(e2eRepo+name+":1.7", files, v1.Config{
			Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}, Env: env, WorkingDir: "/",
			ExposedPorts: ports(80),
		}); err != nil {
			return nil, err
		}
	}

	// jessie-dnsutils:1.7 (test/images/jessie-dnsutils: Debian with
	// dnsutils): the userland with Debian's dig, nslookup, host and getent.
	dnsFiles, err := withLibraries(in.dnsutils)
	if err != nil {
		return nil, err
	}
	dnsFiles = append(dnsFiles, nsswitch)
	if err := add(e2eRepo+"jessie-dnsutils:1.7", with(dnsFiles...), v1.Config{Cmd: []string{"sh"}, Env: env, WorkingDir: "/"}); err != nil {
		return nil, err
	}

	// nonewprivs:1.3: nnp, setuid root, prints its effective uid.
	if err := add(e2eRepo+"nonewprivs:1.3", with(
		testimages.File{Name: "usr/local", Mode: fs.ModeDir | 0o755},
		testimages.File{Name: "usr/local/bin", Mode: fs.ModeDir | 0o755},
		testimages.File{Name: "usr/local/bin/nnp", Mode: fs.ModeSetuid | 0o755, Data: nnp},
	), v1.Config{Cmd: []string{"nnp"}, Env: env, WorkingDir: "/"}); err != nil {
		return nil, err
	}

	// nonroot:1.4: the userland running as uid 1234.
	if err := add(e2eRepo+"nonroot:1.4", with(), v1.Config{Cmd: []string{"sh"}, Env: env, WorkingDir: "/", User: "1234"}); err != nil {
		return nil, err
	}

	// httpd:2.4.38-4 and 2.4.39-4: "It works!" on port 80 from Apache's
	// document root, /usr/local/apache2/htdocs.
	for _, tag := range []string{"2.4.38-4", "2.4.39-4"} {
		files := with(webServer("httpd-foreground", apacheRoot,
			"<html><body><h1>It works!</h1></body></html>\n")...)
		if err := add(e2eRepo+"httpd:"+tag, files, v1.Config{
			Cmd: []string{"httpd-foreground"}, Env: append(env, "HTTPD_PREFIX=/usr/local/apache2"),
			WorkingDir: "/usr/local/apache2", ExposedPorts: ports(80),
		}); err != nil {
			return nil, err
		}
	}

	// nginx:1.14-4 and 1.15-4: nginx's welcome page on port 80 from
	// /usr/share/nginx/html; `nginx -g 'daemon off;'` as the command.
	for _, tag := range []string{"1.14-4", "1.15-4"} {
		files := with(webServer("nginx", nginxRoot,
			"<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n</body>\n</html>\n")...)
		if err := add(e2eRepo+"nginx:"+tag, files, v1.Config{
			Cmd: []string{"nginx", "-g", "daemon off;"}, Env: env, WorkingDir: "/",
			ExposedPorts: ports(80), StopSignal: "SIGQUIT",
		}); err != nil {
			return nil, err
		}
	}

	// sample-apiserver:1.29.2 (test/images/sample-apiserver/Dockerfile):
	// /sample-apiserver as the entrypoint, on a distroless base (no shell).
	if in.sampleAPIServer != "" {
		bin, err := read(in.sampleAPIServer)
		if err != nil {
			return nil, err
		}
		if err := add(e2eRepo+"sample-apiserver:1.29.2", append(testimages.BaseFiles(),
			testimages.File{Name: "sample-apiserver", Mode: 0o755, Data: bin},
		), v1.Config{Entrypoint: []string{"/sample-apiserver"}, Env: env, WorkingDir: "/"}); err != nil {
			return nil, err
		}
	}

	// etcd:3.6.4-0 (GcEtcdRegistry, registry.k8s.io/etcd): etcd at
	// /usr/local/bin/etcd, which the Aggregator spec runs as the sample
	// apiserver's storage (its data in default.etcd under the working
	// directory, /).
	if in.etcd != "" {
		bin, err := read(in.etcd)
		if err != nil {
			return nil, err
		}
		if err := add("etcd:3.6.4-0", append(testimages.BaseFiles(),
			testimages.File{Name: "usr/local", Mode: fs.ModeDir | 0o755},
			testimages.File{Name: "usr/local/bin", Mode: fs.ModeDir | 0o755},
			testimages.File{Name: "usr/local/bin/etcd", Mode: 0o755, Data: bin},
		), v1.Config{Cmd: []string{"/usr/local/bin/etcd"}, Env: env, WorkingDir: "/"}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// userland is the shared base: BaseFiles, the static busybox with every
// applet it has linked into /bin, the static bash as /bin/bash, and /bin/sh
// the wrapper of hack/e2eimages/sh (busybox ash, or bash in POSIX mode when
// the environment has names ash 1.35 would drop).
func userland(busyboxPath, bashPath, shPath string) ([]testimages.File, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return b, testimages.RequireStatic(path, b)
	}
	busybox, err := read(busyboxPath)
	if err != nil {
		return nil, err
	}
	bash, err := read(bashPath)
	if err != nil {
		return nil, err
	}
	sh, err := read(shPath)
	if err != nil {
		return nil, err
	}
	list, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busyboxPath, err)
	}
	files := append(testimages.BaseFiles(),
		testimages.File{Name: "bin/busybox", Mode: 0o755, Data: busybox},
		testimages.File{Name: "bin/bash", Mode: 0o755, Data: bash},
		testimages.File{Name: "bin/sh", Mode: 0o755, Data: sh},
		testimages.File{Name: "usr/bin/env", Link: "/bin/busybox"},
		testimages.File{Name: "sbin", Mode: fs.ModeDir | 0o755},
		testimages.File{Name: "usr/sbin", Mode: fs.ModeDir | 0o755},
	)
	for _, applet := range strings.Fields(string(list)) {
		switch applet {
		case "sh", "bash", "busybox", "env":
			continue
		}
		files = append(files, testimages.File{Name: "bin/" + applet, Link: "busybox"})
	}
	files = append(files, testimages.File{Name: "bin/env", Link: "busybox"})
	return files, nil
}

// withLibraries is the programs at their paths with every shared library
// and the dynamic loader ldd reports for them, each at the path ldd names
// (symlinks resolved into regular files), and their directories.
func withLibraries(programs []string) ([]testimages.File, error) {
	paths := map[string]bool{}
	for _, prog := range programs {
		paths[prog] = true
		out, err := exec.Command("ldd", prog).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", prog, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
				paths[f[2]] = true
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				paths[f[0]] = true // the loader
			}
		}
	}
	dirs := map[string]bool{}
	var files []testimages.File
	for p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(filepath.Clean(p), "/")
		files = append(files, testimages.File{Name: name, Mode: 0o755, Data: data})
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// The userland has these already.
	for _, d := range []string{"bin", "usr", "usr/bin", "usr/sbin", "sbin"} {
		delete(dirs, d)
	}
	for d := range dirs {
		files = append(files, testimages.File{Name: d, Mode: fs.ModeDir | 0o755})
	}
	return files, nil
}

// withAccounts appends lines to the userland's /etc/passwd and /etc/group.
func withAccounts(files []testimages.File, passwd, group string) []testimages.File {
	out := append([]testimages.File(nil), files...)
	for i, f := range out {
		switch f.Name {
		case "etc/passwd":
			out[i].Data = append(append([]byte(nil), f.Data...), passwd...)
		case "etc/group":
			out[i].Data = append(append([]byte(nil), f.Data...), group...)
		}
	}
	return out
}

// webServer is a web server stand-in: /usr/local/bin/NAME (on PATH before
// any busybox applet of that name) serves root on port 80 with busybox
// httpd, whatever its arguments, and stops at once on SIGTERM or SIGQUIT
// (the shell stays PID 1: PID 1 gets no default signal handling and httpd
// sets none); root/index.html holds index.
func webServer(name, root, index string) []testimages.File {
	script := fmt.Sprintf(`#!/bin/sh
trap 'exit 0' TERM QUIT INT
busybox httpd -f -p 80 -h /%s &
wait
`, root)
	files := []testimages.File{
		{Name: "usr/local", Mode: fs.ModeDir | 0o755},
		{Name: "usr/local/bin", Mode: fs.ModeDir | 0o755},
		{Name: "usr/local/bin/" + name, Mode: 0o755, Data: []byte(script)},
		{Name: root + "/index.html", Mode: 0o644, Data: []byte(index)},
	}
	// Every directory of root, so the layer holds them with their modes.
	for d := root; d != "." && d != "usr" && d != "usr/local"; d = filepath.Dir(d) {
		files = append(files, testimages.File{Name: d, Mode: fs.ModeDir | 0o755})
	}
	return files
}
