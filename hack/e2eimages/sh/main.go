// Command sh is /bin/sh of the e2e test images hack/e2eimages builds: busybox
// ash, as in upstream's busybox image (the specs compare its error messages
// word for word, e.g. "/bin/sh: can't create /file: Read-only file system"),
// unless the environment holds a variable whose name is not a shell
// identifier. Debian's busybox (1.35) ash drops those from the environment
// of the commands it runs, where upstream's (1.37) passes them on, and the
// envFrom specs read them back with `sh -c env`: then bash, in POSIX mode,
// runs the command instead. Either way the arguments are unchanged.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

const (
	busybox = "/bin/busybox"
	bash    = "/bin/bash"
)

func main() {
	prog := busybox
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !identifier(name) {
			prog = bash
			break
		}
	}
	// busybox picks the applet from argv[0] (sh); bash named sh runs in
	// POSIX mode.
	err := syscall.Exec(prog, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "sh: exec %s: %v\n", prog, err)
	os.Exit(127)
}

// identifier reports whether name is a POSIX shell variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func identifier(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
