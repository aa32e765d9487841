package unixsock

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Listen creates the socket's directory and replaces a stale socket file
// left by a process that did not remove it; the socket accepts
// connections.
func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugins", "x.sock")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil { // the stale file
		t.Fatal(err)
	}
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the new socket: %v", err)
	}
	conn.Close()
}

// A missing directory is created.
func TestListenCreatesDirectory(t *testing.T) {
	lis, err := Listen(filepath.Join(t.TempDir(), "a", "b", "x.sock"))
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
}
